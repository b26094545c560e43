// Writes test/durations.json from a jest run's JSON report: how long each test file took, so a fresh
// clone's jest starts the longest files first (test/helpers/sequencer.mjs) instead of ordering them by
// size, which left the small files that rerun whole suites on PostgreSQL for the end of the run.
//   NODE_OPTIONS=--experimental-vm-modules npx jest --json --outputFile=/tmp/jest.json
//   node scripts/test-durations.mjs /tmp/jest.json
// Only the order depends on it: a stale or missing entry never changes what runs or passes.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const report = process.argv[2];
if (!report) {
  process.stderr.write('usage: node scripts/test-durations.mjs <jest --json report>\n');
  process.exit(2);
}
const root = new URL('..', import.meta.url).pathname;
const { testResults } = JSON.parse(readFileSync(report, 'utf8'));
const durations = Object.fromEntries(
  testResults
    .map((r) => [relative(root, r.name).replace(/^.*?(test\/)/, '$1'), Math.round((r.endTime - r.startTime) / 100) / 10])
    .sort(([a], [b]) => (a < b ? -1 : 1)),
);
writeFileSync(new URL('../test/durations.json', import.meta.url), `${JSON.stringify(durations, null, 2)}\n`);
process.stdout.write(`test/durations.json: ${Object.keys(durations).length} files\n`);
