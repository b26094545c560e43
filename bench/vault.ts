import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { createKernel, type Kernel } from '../kernel/index.js';
import { rng, vocabulary, zipfPicker } from './corpus.js';
import { percentile } from './stats.js';

/**
 * The vault pack against ripgrep, same run, same files:
 * 1. a generated vault of 50,000 notes (realistic sizes, Zipf-distributed words, headings, front
 *    matter, tags and wiki links), reused across runs;
 * 2. full index build (the first open of an empty index) and `vault_reindex`, with notes/s;
 * 3. query latency p50/p99 through the pipeline for word, phrase and tag queries, against `rg -l`
 *    over the same folder for the same strings (ripgrep installed from Debian when missing);
 * 4. an edit to searchable: through vault_update_note (index updated in the same step), and a file
 *    saved outside Memo (through the watcher, its 50 ms quiet period included);
 * 5. 5,000 files changed at once (a checkout) until all are searchable;
 * 6. the index's size on disk.
 */

const NOTES = Number(process.env.BENCH_VAULT_NOTES ?? 50_000);
const FOLDERS = 50;
const QUERIES = 200;
const RG_QUERIES = 20;
const WRITES_AFTER_BUILD = 400;
const PLUGINS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../plugins');

interface GeneratedVault {
  dir: string;
  vault: string;
  words: string[];
  tags: string[];
  bytes: number;
}

function ensureVault(): GeneratedVault {
  const dir = path.join(os.tmpdir(), `memo-bench-vault-v2-${NOTES}`);
  const vault = path.join(dir, 'vault');
  const rand = rng(42);
  const words = vocabulary(20_000, rand);
  const tags = Array.from({ length: 300 }, (_, i) => (i % 5 === 0 ? `area/${words[i]}` : words[i + 1000]!));
  const marker = path.join(dir, '.complete');
  if (fs.existsSync(marker)) return { dir, vault, words, tags, bytes: Number(fs.readFileSync(marker, 'utf8')) };
  fs.rmSync(dir, { recursive: true, force: true });
  const pickWord = zipfPicker(words.length, rand);
  const pickTag = zipfPicker(tags.length, rand);
  const titles = Array.from({ length: NOTES }, (_, i) => `${words[pickWord()]} ${words[(i * 7919) % words.length]} ${i}`);
  let bytes = 0;
  for (let i = 0; i < NOTES; i++) {
    const folder = path.join(vault, `area-${i % FOLDERS}`);
    if (i < FOLDERS) fs.mkdirSync(folder, { recursive: true });
    // Sizes: mostly short notes (median ~1 KB), a long tail to ~12 KB.
    const targetWords = Math.floor(30 + 1500 * Math.pow(rand(), 4));
    const lines: string[] = [];
    if (rand() < 0.5) {
      const t = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => tags[pickTag()]);
      lines.push('---', `tags: [${[...new Set(t)].join(', ')}]`, `created: 2026-0${1 + (i % 9)}-1${i % 10}`, '---');
    }
    lines.push(`# ${titles[i]}`);
    let w = 0;
    while (w < targetWords) {
      if (rand() < 0.08) lines.push('', `## ${words[pickWord()]} ${words[pickWord()]}`);
      const sentence: string[] = [];
      const len = 8 + Math.floor(rand() * 12);
      for (let k = 0; k < len; k++) sentence.push(words[pickWord()]!);
      if (rand() < 0.3) sentence.push(`[[${titles[Math.floor(rand() * NOTES)]}]]`);
      if (rand() < 0.05) sentence.push(`#${tags[pickTag()]}`);
      lines.push(`${sentence.join(' ')}.`);
      w += len;
    }
    const text = `${lines.join('\n')}\n`;
    bytes += Buffer.byteLength(text);
    fs.writeFileSync(path.join(folder, `${titles[i]}.md`), text);
  }
  fs.writeFileSync(marker, String(bytes));
  return { dir, vault, words, tags, bytes };
}

function ensureRipgrep(): string {
  const found = spawnSync('rg', ['--version'], { encoding: 'utf8' });
  if (found.status === 0) return found.stdout.split('\n')[0] ?? 'rg';
  console.log('ripgrep is missing: apt-get install -y ripgrep');
  if (spawnSync('apt-get', ['install', '-y', 'ripgrep'], { stdio: 'ignore' }).status !== 0) {
    spawnSync('apt-get', ['update'], { stdio: 'ignore' });
    spawnSync('apt-get', ['install', '-y', 'ripgrep'], { stdio: 'ignore' });
  }
  const again = spawnSync('rg', ['--version'], { encoding: 'utf8' });
  if (again.status !== 0) throw new Error('ripgrep could not be installed (apt-get install -y ripgrep failed)');
  return again.stdout.split('\n')[0] ?? 'rg';
}

/** The fields of results the bench reads. */
interface Counted {
  count: number;
  notes: number;
}

async function call(kernel: Kernel, tool: string, args: Record<string, unknown>): Promise<Counted> {
  const r = await kernel.invoke({ tool, args, caller: { kind: 'host' } });
  if (!r.ok) throw new Error(`${tool}: ${r.error.code} ${r.error.message}`);
  return r.value as unknown as Counted;
}

function ms(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

async function boot(root: string, dataDir: string, watch: boolean): Promise<Kernel> {
  const kernel = createKernel({
    root,
    dataDir,
    rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 },
    packs: [],
    prompter: { ask: () => Promise.resolve('allow-once' as const) },
  });
  const [state] = await kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['vault'] }]);
  if (state?.status !== 'loaded') throw new Error(`vault did not load: ${state?.error ?? 'not found'}`);
  kernel.packs.setConfig('vault', { folder: 'vault', watch });
  return kernel;
}

function sizeOf(p: string): number {
  try {
    return fs.statSync(p).size;
  } catch {
    return 0;
  }
}

function mb(n: number): string {
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

interface Series {
  p50: number;
  p99: number;
}

function series(samples: number[]): Series {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99) };
}

/** vault_update_note (approved, index updated in the same step) then a search that finds the new word: 20 notes of one folder. */
async function editsThroughTool(kernel: Kernel, vault: string, folder: string, token: string, touched: Map<string, number>): Promise<Series> {
  const samples: number[] = [];
  for (const [i, name] of fs.readdirSync(path.join(vault, folder)).slice(0, 20).entries()) {
    const file = path.join(vault, folder, name);
    if (!touched.has(file)) touched.set(file, fs.statSync(file).size);
    const s = process.hrtime.bigint();
    await call(kernel, 'vault_update_note', { note: `${folder}/${name}`, append: `bench${token}x${i}\n` });
    if ((await call(kernel, 'vault_search_notes', { query: `bench${token}x${i}` })).count !== 1)
      throw new Error('an edit through the tool was not searchable at once');
    samples.push(ms(s));
  }
  return series(samples);
}

export async function benchVault(): Promise<void> {
  const t0 = process.hrtime.bigint();
  const gen = ensureVault();
  console.log(`\nvault: ${NOTES} notes (${mb(gen.bytes)}) at ${gen.vault} (ready in ${ms(t0).toFixed(0)} ms)`);
  const rgVersion = ensureRipgrep();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-vault-data-'));
  const touched = new Map<string, number>();
  try {
    // 0. The baseline, in the same run: the same first open with the build in workers turned off
    // (MEMO_VAULT_BULK_MIN above the vault's size), as vaults under 2,000 files are built: chunk after
    // chunk applied in the event loop, each chunk's links resolved and the indexes kept up to date.
    const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-vault-base-'));
    let oneByOne: number;
    try {
      process.env.MEMO_VAULT_BULK_MIN = String(NOTES + 1);
      const base = await boot(gen.dir, baseDir, false);
      const t0 = process.hrtime.bigint();
      await call(base, 'vault_search_notes', { query: 'warmup', limit: 1 });
      oneByOne = ms(t0);
      await base.shutdown();
    } finally {
      delete process.env.MEMO_VAULT_BULK_MIN;
      fs.rmSync(baseDir, { recursive: true, force: true });
    }

    // 1. Full build: the first open of an empty index, no watcher.
    let kernel = await boot(gen.dir, dataDir, false);
    let t = process.hrtime.bigint();
    await call(kernel, 'vault_search_notes', { query: 'warmup', limit: 1 });
    const firstOpen = ms(t);
    t = process.hrtime.bigint();
    const re = await call(kernel, 'vault_reindex', {});
    const reindexMs = ms(t);
    console.log(
      `  full build (first open, empty index): in workers ${(firstOpen / 1000).toFixed(1)} s (${((NOTES / firstOpen) * 1000).toFixed(0)} notes/s); one chunk after another in the event loop ${(oneByOne / 1000).toFixed(1)} s; ${(oneByOne / firstOpen).toFixed(1)}x faster`,
    );
    console.log(`  vault_reindex (rebuild from the files): ${(reindexMs / 1000).toFixed(1)} s, ${((re.notes / reindexMs) * 1000).toFixed(0)} notes/s`);
    // Writes right after a build: the full-text table a build leaves must take small writes without a
    // long merge inside one of them (FTS5's crisis merge; see FINAL_SETTINGS in plugins/vault/index-build.ts).
    const after: number[] = [];
    for (let i = 0; i < WRITES_AFTER_BUILD; i++) {
      const folder = `area-${20 + (i % 20)}`;
      const name = fs.readdirSync(path.join(gen.vault, folder))[Math.floor(i / 20)]!;
      const file = path.join(gen.vault, folder, name);
      if (!touched.has(file)) touched.set(file, fs.statSync(file).size);
      const s = process.hrtime.bigint();
      await call(kernel, 'vault_update_note', { note: `${folder}/${name}`, append: `after build ${i}\n` });
      after.push(ms(s));
    }
    const w = series(after);
    console.log(
      `  ${WRITES_AFTER_BUILD} vault_update_note calls right after the build: p50 ${w.p50.toFixed(1)} ms, p99 ${w.p99.toFixed(1)} ms, slowest ${Math.max(...after).toFixed(0)} ms`,
    );

    // 2. Queries through the pipeline against ripgrep over the same files.
    const rand = rng(7);
    const mid = (lo: number, hi: number) => gen.words[lo + Math.floor(rand() * (hi - lo))]!;
    // Phrases that occur: two words lifted from notes' text.
    const phrases = fs
      .readdirSync(path.join(gen.vault, 'area-3'))
      .slice(0, QUERIES)
      .map((f) => {
        const line =
          fs
            .readFileSync(path.join(gen.vault, 'area-3', f), 'utf8')
            .split('\n')
            .find((l) => /^[a-z]/.test(l)) ?? 'ka lo';
        const ws = line.split(/\s+/);
        return `${ws[1] ?? 'ka'} ${ws[2] ?? 'lo'}`.replace(/[^a-z ]/g, '');
      });
    const kinds: Record<string, Array<{ memo: Record<string, unknown>; rg: string[] }>> = { word: [], phrase: [], tag: [] };
    for (let i = 0; i < QUERIES; i++) {
      const w = mid(50, 5000);
      kinds.word!.push({ memo: { query: w }, rg: ['-l', '-i', '-F', w] });
      kinds.phrase!.push({ memo: { query: `"${phrases[i % phrases.length]}"` }, rg: ['-l', '-i', '-F', phrases[i % phrases.length]!] });
      const tag = gen.tags[Math.floor(rand() * 60)]!;
      kinds.tag!.push({ memo: { query: '', tags: [tag] }, rg: ['-l', '-i', '-e', `#${tag}\\b`, '-e', `tags: \\[.*\\b${tag}\\b`] });
    }
    const rows: string[] = [];
    for (const [kind, qs] of Object.entries(kinds)) {
      for (const q of qs.slice(0, 20)) await call(kernel, 'vault_search_notes', { ...q.memo, limit: 20 }); // warm-up
      const memo: number[] = [];
      for (const q of qs) {
        const s = process.hrtime.bigint();
        await call(kernel, 'vault_search_notes', { ...q.memo, limit: 20 });
        memo.push(ms(s));
      }
      const rg: number[] = [];
      for (const q of qs.slice(0, RG_QUERIES)) {
        const s = process.hrtime.bigint();
        spawnSync('rg', [...q.rg, gen.vault], { stdio: 'ignore' });
        rg.push(ms(s));
      }
      const m = series(memo);
      const r = series(rg);
      rows.push(
        `  ${kind.padEnd(7)} memo p50 ${m.p50.toFixed(2).padStart(7)} ms  p99 ${m.p99.toFixed(2).padStart(7)} ms | rg -l p50 ${r.p50.toFixed(0).padStart(5)} ms  p99 ${r.p99.toFixed(0).padStart(5)} ms | ${(r.p50 / m.p50).toFixed(0)}x faster at p50`,
      );
    }
    console.log(`  queries (${QUERIES} each through the pipeline, limit 20; ${RG_QUERIES} each with ${rgVersion}):`);
    for (const r of rows) console.log(r);
    const run = Date.now().toString(36);
    const quiet = await editsThroughTool(kernel, gen.vault, 'area-6', `${run}q`, touched);
    console.log(`  edit -> searchable, watcher off: vault_update_note + search p50 ${quiet.p50.toFixed(1)} ms, p99 ${quiet.p99.toFixed(1)} ms`);
    await kernel.shutdown();

    // 3. Reopen with the watcher: the index is current, so opening is a scan by size and mtime.
    t = process.hrtime.bigint();
    kernel = await boot(gen.dir, dataDir, true);
    await call(kernel, 'vault_search_notes', { query: 'warmup', limit: 1 });
    console.log(`  reopen with a current index + watcher ready: ${(ms(t) / 1000).toFixed(1)} s`);

    // 4. One edit to searchable, with the watcher on. Tokens unique to this run; every file touched is cut back at the end.
    const a = await editsThroughTool(kernel, gen.vault, 'area-7', `${run}a`, touched);
    const outside: number[] = [];
    for (let i = 0; i < 10; i++) {
      const note = `area-8/${fs.readdirSync(path.join(gen.vault, 'area-8'))[i]!}`;
      const file = path.join(gen.vault, note);
      if (!touched.has(file)) touched.set(file, fs.statSync(file).size);
      const s = process.hrtime.bigint();
      fs.appendFileSync(file, `bench${run}x${i}b\n`);
      for (;;) {
        if ((await call(kernel, 'vault_search_notes', { query: `bench${run}x${i}b` })).count === 1) break;
        await new Promise((r) => setTimeout(r, 2));
      }
      outside.push(ms(s));
    }
    const b = series(outside);
    console.log(
      `  edit -> searchable, watcher on: vault_update_note + search p50 ${a.p50.toFixed(1)} ms, p99 ${a.p99.toFixed(1)} ms (index updated in the same step)`,
    );
    console.log(
      `  edit -> searchable: file saved outside Memo p50 ${b.p50.toFixed(0)} ms, max ${Math.max(...outside).toFixed(0)} ms (watcher: 50 ms quiet period)`,
    );

    // 5. A checkout: 5,000 files changed at once; counted in the index file itself (a tool's limit is 200).
    const storm: string[] = [];
    for (let f = 10; storm.length < 5000 && f < FOLDERS; f++)
      for (const name of fs.readdirSync(path.join(gen.vault, `area-${f}`))) if (storm.length < 5000) storm.push(`area-${f}/${name}`);
    const reader = new Database(path.join(dataDir, 'packs-data', 'vault', 'vault.sqlite'), { readonly: true });
    const count = reader.prepare(`SELECT count(*) AS n FROM notes_fts WHERE notes_fts MATCH ?`);
    t = process.hrtime.bigint();
    for (const rel of storm) {
      const file = path.join(gen.vault, rel);
      if (!touched.has(file)) touched.set(file, fs.statSync(file).size);
      fs.appendFileSync(file, `storm${run}\n`);
    }
    const written = ms(t);
    while ((count.get(`storm${run}`) as { n: number }).n < storm.length) await new Promise((r) => setTimeout(r, 20));
    console.log(
      `  ${storm.length} files changed at once (written in ${written.toFixed(0)} ms): all searchable ${(ms(t) / 1000).toFixed(1)} s after the first write`,
    );
    reader.close();
    await kernel.shutdown();

    // 6. Size on disk (WAL checkpointed at close).
    const db = path.join(dataDir, 'packs-data', 'vault', 'vault.sqlite');
    const size = sizeOf(db) + sizeOf(`${db}-wal`) + sizeOf(`${db}-shm`);
    console.log(`  index on disk: ${mb(size)} for ${mb(gen.bytes)} of notes (${((size / gen.bytes) * 100).toFixed(0)}%)`);
  } finally {
    // The generated vault is reused by the next run: the bench only appended, so cutting back restores it.
    for (const [file, size] of touched) fs.truncateSync(file, size);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
