#!/usr/bin/env node
// A pack made by `memo plugins new` passes as generated: in an empty temp folder, `memo plugins new`
// (JavaScript, then --ts), then inside each `npm install` (memo-kernel linked from this install by
// its file: path; with TypeScript, typescript and @types/node from the registry or npm's cache, and
// index.js built by prepare) and `node --test`. Run by .ci/run after npm test: it needs the registry
// (or a warm cache) and about a minute per pack. Exit 1 with the failing step's output on failure.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'memo');
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-scaffold-'));

function step(what, cmd, args, cwd) {
  const started = Date.now();
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  const took = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status !== 0) {
    process.stderr.write(`FAIL ${what} (exit ${r.status}, ${took} s)\n${r.stdout}\n${r.stderr}\n`);
    fs.rmSync(base, { recursive: true, force: true });
    process.exit(1);
  }
  process.stdout.write(`ok   ${what} (${took} s)\n`);
  return r.stdout;
}

try {
  for (const [id, flags] of [
    ['js-notes', []],
    ['ts-notes', ['--ts']],
  ]) {
    step(`memo plugins new ${id} ${flags.join(' ')}`.trim(), process.execPath, [BIN, 'plugins', 'new', id, ...flags], base);
    const dir = path.join(base, 'packs', id);
    step(`${id}: npm install`, 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], dir);
    const out = step(`${id}: node --test`, process.execPath, ['--test'], dir);
    if (!/# pass [1-9]\d*\n# fail 0\n/.test(out)) {
      process.stderr.write(`FAIL ${id}: node --test did not report its tests passing:\n${out}\n`);
      process.exit(1);
    }
    step(`${id}: memo plugins validate`, process.execPath, [BIN, 'plugins', 'validate', path.join('packs', id)], base);
  }
  process.stdout.write('The scaffold passes as generated (JavaScript and TypeScript).\n');
} finally {
  fs.rmSync(base, { recursive: true, force: true });
}
