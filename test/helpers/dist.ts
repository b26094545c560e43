/**
 * Guard for tests that run the compiled kernel (bin/memo, dist/): they refuse to run against a
 * dist/ older than the sources, which would test yesterday's code. `npm test` builds first
 * (pretest), so there it always passes; running one e2e file by hand after an edit, it says to
 * run `npm run build`. MEMO_ALLOW_STALE_DIST=1 turns the refusal into a warning (for a checkout
 * that others edit while you run tests; never set in CI).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');

/** Every file under `dir` (relative to `root`), skipping node_modules. */
function filesUnder(root: string, dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name === 'node_modules') continue;
      const child = path.join(rel, e.name);
      if (e.isDirectory()) walk(child);
      else if (e.isFile()) out.push(child);
    }
  };
  walk(dir);
  return out;
}

/** Where the build puts a source file: tsc turns kernel/ and plugins/ .ts into .js; the rest is copied. */
function builtPathOf(source: string): string | null {
  if (source.endsWith('.d.ts')) return source.startsWith(`plugins${path.sep}`) ? path.join('dist', source) : null;
  if (source.endsWith('.ts'))
    return source.startsWith(`kernel${path.sep}`) || source.startsWith(`plugins${path.sep}`) ? path.join('dist', source.slice(0, -3) + '.js') : null;
  return source.startsWith(`plugins${path.sep}`) || source.startsWith(`skills${path.sep}`) ? path.join('dist', source) : null;
}

/**
 * The first source (kernel/**\/*.ts, plugins/**, skills/**) whose build output is missing or older
 * than it, with the reason; null when dist/ is up to date.
 */
export function staleBuild(root = ROOT): string | null {
  const sources = [...filesUnder(root, 'kernel').filter((f) => f.endsWith('.ts')), ...filesUnder(root, 'plugins'), ...filesUnder(root, 'skills')];
  let newest: { source: string; mtimeMs: number; built: string; builtMs: number | null } | null = null;
  for (const source of sources) {
    const built = builtPathOf(source);
    if (!built) continue;
    const mtimeMs = fs.statSync(path.join(root, source)).mtimeMs;
    let builtMs: number | null = null;
    try {
      builtMs = fs.statSync(path.join(root, built)).mtimeMs;
    } catch {
      // not built at all
    }
    if (builtMs !== null && builtMs >= mtimeMs) continue;
    if (!newest || mtimeMs > newest.mtimeMs) newest = { source, mtimeMs, built, builtMs };
  }
  if (!newest) return null;
  return newest.builtMs === null
    ? `dist/ has no ${newest.built} for ${newest.source}: run npm run build`
    : `dist/ is older than ${newest.source}: run npm run build`;
}

/** Throws (failing the test file) when dist/ is older than the sources; call it in beforeAll. */
export function requireFreshBuild(): void {
  const stale = staleBuild();
  if (!stale) return;
  if (process.env.MEMO_ALLOW_STALE_DIST === '1') process.stderr.write(`warning (MEMO_ALLOW_STALE_DIST=1): ${stale}\n`);
  else throw new Error(stale);
}
