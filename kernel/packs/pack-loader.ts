import * as fs from 'node:fs';
import * as path from 'node:path';
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
import { isMemoError } from '../errors.js';
import type { ToolImplementation } from '../tools/contract.js';
import { createAjv, describeAjvErrors, type PackDefinition, type PackSource } from '../tools/tool-registry.js';
import { MANIFEST_SCHEMA, type PackManifest } from './manifest.js';
import type { PackActivate } from './pack-api.js';

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

const validateManifest = createAjv().compile(MANIFEST_SCHEMA);

/** Reads and validates `plugin.json`. Throws an Error whose message says what is wrong. */
export function readManifest(dir: string): PackManifest {
  const file = path.join(dir, 'plugin.json');
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(
      e.code === 'ENOENT' ? 'has no plugin.json' : e.code ? `plugin.json cannot be read (${e.code})` : `plugin.json is not valid JSON (${e.message})`,
      { cause: err },
    );
  }
  if (!validateManifest(raw)) throw new Error(`plugin.json is invalid: ${describeAjvErrors(validateManifest.errors).join('; ')}`);
  const manifest = raw as unknown as PackManifest;
  const folder = path.basename(dir);
  if (manifest.id !== folder) throw new Error(`plugin.json says id "${manifest.id}" but the folder is "${folder}"; they must match`);
  return manifest;
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
  throw new Error(`its main file ${main} does not exist`);
}

let hooksInstalled = false;

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
  // The query names the pack's folder (its files, and only they, are versioned) and makes a changed
  // file a new module (ESM caches by URL): used by hot reload.
  installPackHooks();
  const query = new URLSearchParams({ ...(version ? { 'memo-v': String(version) } : {}), 'memo-pack': pathToFileURL(fs.realpathSync(dir)).href });
  const url = `${pathToFileURL(file).href}?${query.toString()}`;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`its code failed to load: ${(err as Error)?.message ?? String(err)}`, { cause: err });
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
    throw new Error(`its code and plugin.json disagree: ${parts.join('; ')}`);
  }
  const activate = mod.activate ?? (mod.default as Record<string, unknown> | undefined)?.activate;
  if (activate !== undefined && typeof activate !== 'function') throw new Error('its "activate" export is not a function');
  // Every declared tool has a handler: checked above.
  const tools = manifest.tools.map((spec) => ({ spec, impl: handlers[spec.name]! }));
  return activate ? { tools, activate: activate as PackActivate } : { tools };
}

/** Lists pack folders (subfolders holding a plugin.json, or any subfolder so a missing manifest is reported). */
export function listPackDirs(folders: PackFolder[]): PackFolder[] {
  const out: PackFolder[] = [];
  for (const { dir, source } of folders) {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.isDirectory() && !e.name.startsWith('.')) out.push({ dir: path.join(dir, e.name), source });
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
        ...(activate ? { activate } : {}),
      },
    };
  } catch (err) {
    const message = isMemoError(err) ? err.message : (err as Error).message;
    return { status: { id, dir: folder.dir, source: folder.source, status: 'failed', error: message } };
  }
}
