import * as fs from 'node:fs';
import * as path from 'node:path';
import { register } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isMemoError } from '../errors.js';
import type { ToolImplementation } from '../tools/contract.js';
import type { PackDefinition, PackSource } from '../tools/tool-registry.js';
import { compileSchema, schemaProblems } from '../tools/schemas.js';
import { MANIFEST_SCHEMA, type PackManifest } from './manifest.js';
import { loadLazyTools, type PackActivate } from './pack-api.js';
import { describeProblem, jsonProblem, locateSyntaxError, packFrame, ProblemError, type Problem } from './pack-problems.js';

export interface PackFolder {
  dir: string;
  source: PackSource;
  /** Load only these pack ids from the folder (default: every pack in it). */
  only?: readonly string[];
}

/** What happened to one pack folder: loaded, or skipped with the reason. */
export interface PackStatus {
  id: string;
  dir: string;
  source: PackSource;
  status: 'loaded' | 'failed';
  error?: string;
  manifest?: PackManifest;
}

const validateManifest = compileSchema(MANIFEST_SCHEMA);

/** What `plugin.json` holds, and every problem found in it (none when `manifest` is set). */
export interface ManifestCheck {
  /** The parsed JSON, valid or not (null when the file is missing or not JSON). */
  raw: unknown;
  manifest: PackManifest | null;
  problems: Problem[];
}

/** Where a manifest schema error lies: `/tools/3/danger` is tool "read_notes", field `danger`. */
function manifestProblem(raw: unknown, pointer: string, field: string, message: string): Problem {
  const m = /^\/tools\/(\d+)(?:\/(.*))?$/.exec(pointer);
  if (!m) return { file: 'plugin.json', field: field || '(the manifest)', message };
  const tools = (raw as { tools?: unknown[] }).tools;
  const name = (tools?.[Number(m[1])] as { name?: unknown } | undefined)?.name;
  const tool = typeof name === 'string' && name !== '' ? name : `#${Number(m[1]) + 1}`;
  return { file: 'plugin.json', tool, field: (m[2] ?? '').replace(/\//g, '.') || '(the declaration)', message };
}

/** Reads and checks `plugin.json`, collecting every problem instead of stopping at the first. */
export function checkManifest(dir: string): ManifestCheck {
  const file = path.join(dir, 'plugin.json');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { raw: null, manifest: null, problems: [{ file: 'plugin.json', message: code === 'ENOENT' ? 'is missing' : `cannot be read (${code})` }] };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { raw: null, manifest: null, problems: [jsonProblem('plugin.json', text, err as Error)] };
  }
  const problems: Problem[] = [];
  if (!validateManifest(raw)) {
    for (const p of schemaProblems(validateManifest.errors, raw)) problems.push(manifestProblem(raw, p.path, p.field, p.message));
  }
  const id = (raw as { id?: unknown } | null)?.id;
  const folder = path.basename(dir);
  if (typeof id === 'string' && id !== folder)
    problems.push({ file: 'plugin.json', field: 'id', message: `is "${id}" but the folder is "${folder}"; they must match` });
  return { raw, manifest: problems.length ? null : (raw as PackManifest), problems };
}

/** Reads and validates `plugin.json`. Throws an Error whose message says what is wrong (every problem, located). */
export function readManifest(dir: string): PackManifest {
  const { manifest, problems } = checkManifest(dir);
  if (manifest) return manifest;
  const first = problems[0];
  if (problems.length === 1 && first && first.field === undefined && first.line === undefined && first.message === 'is missing')
    throw new ProblemError(problems, 'has no plugin.json');
  if (problems.length === 1 && first && first.line !== undefined) {
    let text = '';
    try {
      text = fs.readFileSync(path.join(dir, 'plugin.json'), 'utf8');
    } catch {
      // gone since: the frame is left out
    }
    throw new ProblemError(
      problems,
      `plugin.json ${first.message.replace(/^is not valid JSON: /, `is not valid JSON at line ${first.line}, column ${first.column}: `)}\n${describeProblem(first, text).split('\n').slice(1).join('\n')}`,
    );
  }
  if (problems.length === 1 && first?.field === 'id' && first.message.includes('the folder is'))
    throw new ProblemError(problems, `plugin.json says id ${first.message.replace(/^is /, '')}`);
  const lines = problems.map((p) => describeProblem({ ...p, file: '' }).replace(/^: /, ''));
  throw new ProblemError(problems, `plugin.json is invalid: ${lines.join('; ')}`);
}

/**
 * The file `main` names. Built-in packs are TypeScript: in a source checkout run by ts-jest,
 * `index.js` means the `index.ts` beside it (TypeScript's own import convention).
 */
function resolveMain(dir: string, main: string): string {
  const file = path.resolve(dir, main);
  if (fs.existsSync(file)) return file;
  const ts = file.replace(/\.m?js$/, '.ts');
  if (fs.existsSync(ts)) return ts;
  const built = fs.existsSync(ts) ? ` (${path.relative(dir, ts)} is there: build it, e.g. npx tsc)` : '';
  throw new ProblemError([{ file: main, message: `does not exist${built}` }], `its main file ${main} does not exist${built}`);
}

let hooksInstalled = false;

let ownRoot: string | null | undefined;

/** The real path of this package's folder (the nearest package.json named memo-kernel above this file), or null. */
function packageRoot(): string | null {
  if (ownRoot !== undefined) return ownRoot;
  ownRoot = null;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      if ((JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name === 'memo-kernel') {
        ownRoot = fs.realpathSync(dir);
        break;
      }
    } catch {
      // no package.json here: go up
    }
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return ownRoot;
}

/**
 * Whether importing a pack needs the resolve hook: a reload (its files get the new version), or a
 * pack outside this package (it cannot see `memo-kernel` by name). A built-in pack's first load does
 * not: it finds the kernel through the package's own exports. Registering the hook starts Node's
 * loader worker, and from then on every import in the process round-trips through it, so a start
 * with only built-in packs does without.
 */
function needsPackHooks(realDir: string, version: number): boolean {
  if (version > 0) return true;
  const root = packageRoot();
  return root === null || !(realDir === root || realDir.startsWith(`${root}${path.sep}`));
}

/** Registers the resolve hook: `memo-kernel/pack` means this kernel, and a reloaded pack's own files get its version. */
function installPackHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  try {
    register(new URL('./version-hooks.js', import.meta.url).href);
  } catch {
    // Not available (e.g. under a test runner with its own module system, which maps `memo-kernel/pack`
    // itself): packs inside this package still find the kernel by name, and single-file packs still reload.
  }
}

/** Imports a pack's code and pairs each declared tool with its handler; code and manifest must agree exactly. */
export async function loadPackCode(dir: string, manifest: PackManifest, version = 0): Promise<{ tools: PackDefinition['tools']; activate?: PackActivate }> {
  const file = resolveMain(dir, manifest.main);
  const realDir = fs.realpathSync(dir);
  // With the resolve hook, the query names the pack's folder (its files, and only they, are
  // versioned) and makes a changed file a new module (ESM caches by URL): used by hot reload. A
  // built-in pack's first load goes without hook and without query: its files, imported now or by a
  // lazily loaded tool later (after a hook may have been registered), all keep their plain URLs, so
  // they stay one module graph.
  const hooked = needsPackHooks(realDir, version);
  if (hooked) installPackHooks();
  const query = new URLSearchParams({ ...(version ? { 'memo-v': String(version) } : {}), 'memo-pack': pathToFileURL(realDir).href });
  const url = hooked ? `${pathToFileURL(file).href}?${query.toString()}` : pathToFileURL(file).href;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (err) {
    throw codeLoadError(err, fs.realpathSync(file), fs.realpathSync(dir));
  }
  const handlers = (mod.tools ?? (mod.default as Record<string, unknown> | undefined)?.tools) as Record<string, ToolImplementation> | undefined;
  if (!handlers || typeof handlers !== 'object') throw new Error(`its code does not export "tools" (an object of one handler per declared tool)`);
  const declared = new Set(manifest.tools.map((t) => t.name));
  const missing = [...declared].filter((n) => !(n in handlers));
  const extra = Object.keys(handlers).filter((n) => !declared.has(n));
  if (missing.length || extra.length) {
    const parts = [];
    if (missing.length) parts.push(`no handler for ${missing.join(', ')}`);
    if (extra.length) parts.push(`handlers not declared in plugin.json: ${extra.join(', ')}`);
    const problems: Problem[] = [
      ...missing.map((tool) => ({ file: path.relative(dir, file), tool, message: 'is declared in plugin.json but the code exports no handler for it' })),
      ...extra.map((tool) => ({ file: path.relative(dir, file), tool, message: 'has a handler in the code but is not declared in plugin.json' })),
    ];
    throw new ProblemError(problems, `its code and plugin.json disagree: ${parts.join('; ')}`);
  }
  // Tools whose code loads on their first call (lazyTool) load now on a reload or a check: broken
  // code is refused here, and the previous version keeps running.
  if (version > 0) {
    try {
      await loadLazyTools(handlers);
    } catch (err) {
      throw codeLoadError((err as Error).cause ?? err, fs.realpathSync(file), realDir);
    }
  }
  const activate = mod.activate ?? (mod.default as Record<string, unknown> | undefined)?.activate;
  if (activate !== undefined && typeof activate !== 'function') throw new Error('its "activate" export is not a function');
  // Every declared tool has a handler: checked above.
  const tools = manifest.tools.map((spec) => ({ spec, impl: handlers[spec.name]! }));
  return activate ? { tools, activate: activate as PackActivate } : { tools };
}

/**
 * Why a pack's code did not import, pointing at the line: a syntax error is located by parsing the
 * pack's files (Node 20 does not say where), a throw at load time by the first stack frame inside the
 * pack folder; either way the line is shown with a caret under the column.
 */
function codeLoadError(err: unknown, main: string, packDir: string): Error {
  const e = err as { name?: unknown; message?: unknown } | null;
  const text = `${typeof e?.name === 'string' ? e.name : 'Error'}: ${typeof e?.message === 'string' ? e.message : String(err)}`;
  let where: Problem | null = null;
  let source: string | undefined;
  if (e?.name === 'SyntaxError') {
    const found = locateSyntaxError(main, packDir);
    if (found) {
      where = { file: found.file, line: found.line, column: found.column, message: text };
      source = found.source;
    }
  } else {
    const frame = packFrame(err, packDir);
    if (frame) {
      where = { file: path.relative(packDir, frame.file), line: frame.line, column: frame.column, message: text };
      try {
        source = fs.readFileSync(frame.file, 'utf8');
      } catch {
        // the frame is left out
      }
    }
  }
  const problem = where ?? { file: path.relative(packDir, main), message: text };
  return Object.assign(new ProblemError([problem], `its code failed to load: ${describeProblem(problem, source)}`), { cause: err });
}

/**
 * Whether a subfolder of a pack folder is a pack to load (or report): not when it is a Memo data
 * folder (no plugin.json, and the audit trail's key or file in it). A folder that is gone is a
 * candidate (its pack is unloaded). `memo --packs . ...` in the
 * folder a pack was made in puts ./data among the packs; it is the kernel's state, not a broken pack.
 */
export function isPackCandidate(dir: string): boolean {
  if (fs.existsSync(path.join(dir, 'plugin.json'))) return true;
  return !['audit.key', 'agent-audit.jsonl'].some((f) => fs.existsSync(path.join(dir, f)));
}

/** Lists pack folders (subfolders holding a plugin.json, or any subfolder so a missing manifest is reported). */
export function listPackDirs(folders: PackFolder[]): PackFolder[] {
  const out: PackFolder[] = [];
  for (const { dir, source, only } of folders) {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    // Code-unit order, not localeCompare: the same for pack ids (lowercase ASCII), without ICU's collator at start-up.
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (!e.isDirectory() || e.name.startsWith('.') || (only && !only.includes(e.name))) continue;
      if (!isPackCandidate(path.join(dir, e.name))) continue;
      out.push({ dir: path.join(dir, e.name), source });
    }
  }
  return out;
}

/** Builds a pack definition from a folder, or a failed status with the reason. Never throws. */
export async function loadPackFolder(folder: PackFolder, version = 0): Promise<{ status: PackStatus; definition?: PackDefinition }> {
  const id = path.basename(folder.dir);
  try {
    const manifest = readManifest(folder.dir);
    const { tools, activate } = await loadPackCode(folder.dir, manifest, version);
    return {
      status: { id, dir: folder.dir, source: folder.source, status: 'loaded', manifest },
      definition: {
        id: manifest.id,
        name: manifest.name,
        version: manifest.version,
        description: manifest.description,
        source: folder.source,
        dir: folder.dir,
        tools,
        ...(manifest.modes ? { modes: manifest.modes } : {}),
        ...(activate ? { activate } : {}),
      },
    };
  } catch (err) {
    const message = isMemoError(err) ? err.message : (err as Error).message;
    return { status: { id, dir: folder.dir, source: folder.source, status: 'failed', error: message } };
  }
}
