import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import fg from 'fast-glob';
import { glob } from 'tinyglobby';
import { createKernel, type Kernel, type ToolContext, type ToolImplementation, type ToolSpec } from '../kernel/index.js';
import { PathSandbox } from '../kernel/sandbox/path-sandbox.js';
import { printTable, summarise } from './stats.js';

/**
 * fs-tools through the pipeline against the libraries it wraps, same run, same machine:
 * 1. search_files `**\/*.ts` over a generated 100k-file tree vs tinyglobby's glob (same pattern and
 *    options) and fast-glob; median of 5 each, interleaved.
 * 2. read_file of a 1 MB text file vs fs.promises.readFile; median of 200.
 *
 * Limits off, audit on (a real audit file). The shipped manifest caps maxResults at 5000, far below
 * the ~16k matches here; for a like-for-like comparison the same handlers are also registered
 * in code with that schema bound raised (and the pack setting maxSearchResults raised to match),
 * so the pipeline returns every match like the libraries do. The capped stock call is shown too.
 */

const TREE_FILES = 100_000;
const EXTENSIONS = ['ts', 'js', 'json', 'md', 'txt', 'tsx'];
const GLOB_IGNORE = ['**/.git/**', '**/node_modules/**'];
/** dist/plugins when compiled (bench runs from dist/bench). */
const PLUGINS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../plugins');

/** 10 x 10 x 10 folders (depth 3), 100 files in each (depth 4), extensions mixed. Reused across runs. */
function ensureTree(): string {
  const dir = path.join(os.tmpdir(), 'memo-bench-fs-tree-v1');
  const marker = path.join(dir, '.complete');
  if (fs.existsSync(marker)) return dir;
  fs.rmSync(dir, { recursive: true, force: true });
  let n = 0;
  for (let a = 0; a < 10; a++)
    for (let b = 0; b < 10; b++)
      for (let c = 0; c < 10; c++) {
        const leaf = path.join(dir, `pkg${a}`, `mod${b}`, `part${c}`);
        fs.mkdirSync(leaf, { recursive: true });
        for (let f = 0; f < TREE_FILES / 1000; f++, n++) fs.writeFileSync(path.join(leaf, `file${f}.${EXTENSIONS[n % EXTENSIONS.length]}`), '');
      }
  fs.writeFileSync(marker, '');
  return dir;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  const upper = s[m] ?? NaN; // NaN for no samples, as before
  return s.length % 2 ? upper : ((s[m - 1] ?? NaN) + upper) / 2;
}

async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

async function loadFsTools(kernel: Kernel): Promise<void> {
  const statuses = await kernel.loadPacks([{ dir: PLUGINS, source: 'builtin' }]);
  const mine = statuses.find((s) => s.id === 'fs-tools');
  if (mine?.status !== 'loaded') throw new Error(`fs-tools did not load: ${mine?.error ?? 'not found'}`);
}

/** The same fs-tools handlers, registered in code with maxResults allowed up to `max`. */
async function registerUncapped(kernel: Kernel, max: number): Promise<void> {
  const manifest = JSON.parse(fs.readFileSync(path.join(PLUGINS, 'fs-tools', 'plugin.json'), 'utf8')) as { tools: ToolSpec[] };
  const mod = (await import(new URL('../plugins/fs-tools/index.js', import.meta.url).href)) as { tools: { search_files: ToolImplementation } };
  const spec = structuredClone(manifest.tools.find((t) => t.name === 'search_files')!);
  (spec.parameters as { properties: { maxResults: { maximum: number } } }).properties.maxResults.maximum = max;
  spec.name = 'search_files_uncapped';
  kernel.registerPack({ id: 'fs-tools-bench', tools: [{ spec, impl: mod.tools.search_files }], config: () => ({ maxSearchResults: max }) });
}

async function benchSearch(): Promise<{ ratioTinyglobby: number; ratioFastGlob: number }> {
  const genStart = Date.now();
  const tree = ensureTree();
  console.log(`\nsearch_files: tree of ${TREE_FILES} files at ${tree} (ready in ${Date.now() - genStart} ms)`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-data-'));
  const kernel = createKernel({ root: tree, dataDir, rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 }, packs: [] });
  await loadFsTools(kernel);
  await registerUncapped(kernel, TREE_FILES);

  const cwd = fs.realpathSync(tree);
  const options = { cwd, dot: false, followSymbolicLinks: false, onlyFiles: true, ignore: GLOB_IGNORE };
  let expected = 0;
  const cases: Array<[label: string, run: () => Promise<number>]> = [
    ['tinyglobby glob() directly', async () => (await glob('**/*.ts', options)).length],
    ['fast-glob directly', async () => (await fg('**/*.ts', options)).length],
    [
      'search_files via pipeline, all matches',
      async () => {
        const r = await kernel.invoke({ tool: 'search_files_uncapped', args: { pattern: '**/*.ts', maxResults: TREE_FILES }, caller: { kind: 'host' } });
        if (!r.ok) throw new Error(r.error.message);
        return (r.value as { count: number }).count;
      },
    ],
    [
      'search_files via pipeline, stock cap 5000',
      async () => {
        const r = await kernel.invoke({ tool: 'search_files', args: { pattern: '**/*.ts', maxResults: 5000 }, caller: { kind: 'host' } });
        if (!r.ok) throw new Error(r.error.message);
        return (r.value as { total: number }).total;
      },
    ],
  ];
  const samples = cases.map(() => [] as number[]);
  for (let round = 0; round < 6; round++) {
    for (const [i, [label, run]] of cases.entries()) {
      let found = 0;
      const ms = await timeMs(async () => (found = await run()));
      if (round === 0) {
        if (i === 0) expected = found;
        else if (found !== expected) throw new Error(`${label} found ${found} files, tinyglobby ${expected}`);
        continue; // warm-up round
      }
      samples[i]!.push(ms); // one list per case
    }
  }
  await kernel.shutdown();
  fs.rmSync(dataDir, { recursive: true, force: true });

  console.log(`pattern **/*.ts, ${expected} matches; median of 5 searches each (after one warm-up), interleaved`);
  const med = samples.map(median);
  for (const [i, [label]] of cases.entries()) console.log(`  ${label.padEnd(44)} ${(med[i] ?? NaN).toFixed(1).padStart(8)} ms`);
  const [tinyglobby = NaN, fastGlob = NaN, pipeline = NaN] = med;
  const ratioTinyglobby = pipeline / tinyglobby;
  const ratioFastGlob = pipeline / fastGlob;
  console.log(`  ratio pipeline (all matches) / tinyglobby: ${ratioTinyglobby.toFixed(2)} (target < 1.2); / fast-glob: ${ratioFastGlob.toFixed(2)}`);
  return { ratioTinyglobby, ratioFastGlob };
}

async function benchRead(reads = 200): Promise<{ ratio: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-read-'));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const line = `${'lorem ipsum dolor sit amet '.repeat(3).slice(0, 79)}\n`;
  const text = line.repeat(Math.floor((1024 * 1024) / line.length));
  const file = path.join(root, 'one-mb.txt');
  fs.writeFileSync(file, text);
  const kernel = createKernel({ root, dataDir: path.join(dir, 'data'), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 }, packs: [] });
  await loadFsTools(kernel);

  // The handler alone, with the same sandbox the kernel gives it: what the pack itself costs.
  const mod = (await import(new URL('../plugins/fs-tools/index.js', import.meta.url).href)) as { tools: { read_file: ToolImplementation } };
  const impl = mod.tools.read_file;
  const run = typeof impl === 'function' ? impl : impl.run;
  const ctx = { signal: new AbortController().signal, root, sandbox: new PathSandbox(root), config: {}, progress: () => {} } as unknown as ToolContext;

  const series = {
    direct: new Float64Array(reads),
    handler: new Float64Array(reads),
    piped: new Float64Array(reads),
  };
  const totals = { direct: 0, handler: 0, piped: 0 };
  const viaPipeline = async () => {
    const r = await kernel.invoke({ tool: 'read_file', args: { path: 'one-mb.txt' }, caller: { kind: 'host' } });
    if (!r.ok) throw new Error(r.error.message);
    if ((r.value as { content: string }).content.length !== text.length) throw new Error('short read');
  };
  const viaHandler = async () => {
    if (((await run({ path: 'one-mb.txt' }, ctx)) as { content: string }).content.length !== text.length) throw new Error('short read');
  };
  const viaFs = async () => {
    if ((await fs.promises.readFile(file, 'utf8')).length !== text.length) throw new Error('short read');
  };
  const cases = [
    ['direct', viaFs],
    ['handler', viaHandler],
    ['piped', viaPipeline],
  ] as const;
  for (let i = 0; i < 20; i++) for (const [, fn] of cases) await fn();
  for (let i = 0; i < reads; i++) {
    for (const [key, fn] of cases) {
      const ms = await timeMs(fn);
      series[key][i] = ms * 1000;
      totals[key] += ms;
    }
  }
  await kernel.shutdown();
  fs.rmSync(dir, { recursive: true, force: true });

  const d = summarise('fs.promises.readFile utf8 (baseline)', series.direct, totals.direct);
  const h = summarise('read_file handler alone (no pipeline)', series.handler, totals.handler);
  const p = summarise('read_file via pipeline, audit on', series.piped, totals.piped);
  printTable(`read_file of a ${(text.length / 1024).toFixed(0)} KB text file, ${reads} reads each, interleaved`, [d, h, p]);
  const ratio = p.p50us / d.p50us;
  console.log(`median ratio pipeline / fs.promises.readFile: ${ratio.toFixed(2)}x (target < 2x); handler alone: ${(h.p50us / d.p50us).toFixed(2)}x`);
  return { ratio };
}

export async function benchFsTools(): Promise<{ searchRatio: number; readRatio: number }> {
  const s = await benchSearch();
  const r = await benchRead();
  return { searchRatio: s.ratioTinyglobby, readRatio: r.ratio };
}
