/**
 * Imported first by the files here that rerun a pack's suite on PostgreSQL: the tests of those suites
 * that open the pack's .sqlite file themselves are skipped (reported as skipped, never passed), since
 * there is no file. Each runs on SQLite in its own suite and has a PostgreSQL counterpart beside the
 * import, named in the comment.
 */
const SQLITE_ONLY = new Set([
  // calendar.test.ts: 'refuses an update when the event changed after the preview (another instance bumped it), and writes nothing'
  'refuses an update when the event changed after the preview, and writes nothing',
  // Counts the events of the whole suite, the skipped test's among them. calendar.test.ts: 'exports the local calendar, read from PostgreSQL, as one .ics ...'
  'exports the local calendar as one .ics that reads back the same events',
]);

type It = ((name: string, ...rest: unknown[]) => unknown) & { skip: (name: string, ...rest: unknown[]) => unknown };
const g = globalThis as unknown as { it: It; test: It };
const original = g.it;
const filtered = Object.assign(
  (name: string, ...rest: unknown[]) => (SQLITE_ONLY.has(name) ? original.skip(name, ...rest) : original(name, ...rest)),
  original,
);
g.it = filtered;
g.test = filtered;
