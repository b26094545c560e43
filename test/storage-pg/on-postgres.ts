/**
 * Runs a test file's tests with the kernel's shared database on a throwaway PostgreSQL server, so
 * every kernel the tests make in this process keeps its pack databases and conversations there
 * instead of in SQLite files. (Jest gives each test file its own process.env: a `memo` child process
 * sees MEMO_DATABASE_URL only when it is passed in its `env`, so suites that spawn the CLI are not
 * rerun this way.) MEMO_DATABASE_URL
 * names the database: one for the file, set before any suite's beforeAll makes its kernel, and a
 * fresh one for each test, for the kernels a test makes itself. A kernel restarted in a test, or a
 * second one on the same data folder, stays on the database it was given, as it would on its files.
 *
 * The pack suites under test/plugins are imported as they are by the files in this folder, after a
 * call to this function, so one flow is checked on both backends without a copy of it. When the file
 * ends, each schema in `expected` must exist in some database of the server: a suite that silently
 * stayed on SQLite fails here.
 */
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

export function onPostgres(expected: string[]): { server: () => TestPostgres; url: () => string } {
  let server: TestPostgres | undefined;
  let url = '';
  const saved = process.env.MEMO_DATABASE_URL;
  beforeAll(async () => {
    server = await startPostgres();
    url = await server.database();
    process.env.MEMO_DATABASE_URL = url;
  }, 120_000);
  beforeEach(async () => {
    url = await server!.database();
    process.env.MEMO_DATABASE_URL = url;
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env.MEMO_DATABASE_URL;
    else process.env.MEMO_DATABASE_URL = saved;
    const found = new Set<string>();
    const databases = await server!.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname ~ '^t[0-9]+$'`);
    for (const { datname } of databases) {
      for (const r of await server!.query<{ schema_name: string }>(`SELECT schema_name FROM information_schema.schemata`, [], datname))
        found.add(r.schema_name);
    }
    const missing = expected.filter((s) => !found.has(s));
    if (missing.length) throw new Error(`no test reached PostgreSQL for ${missing.join(', ')}: the suites ran on SQLite files only`);
  });
  return { server: () => server!, url: () => url };
}
