/**
 * Where canvases live and how they are read and written. The vault folder, the feature switch and
 * the entities a card may stand for come from the services other packs offer through the kernel
 * (`vault.entities`, `calendar.events`), looked up at call time, never imported.
 *
 * Every write is checked against the file it was computed from: the `version` a read returned (when
 * the caller gives it), the file the preview was computed from, and the file on disk just before the
 * atomic rename. Any difference refuses the write with CONFLICT and keeps the other change.
 */
import { createHash } from 'node:crypto';
import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import * as path from 'node:path';
import { MemoError, writeFileAtomicAsync, type PackApi, type ResolvedPath, type ToolContext } from 'memo-kernel/pack';
import { EXTENSION, parseScene, serializeScene, type SceneFile } from './scene.js';

/** What the vault pack offers under `vault.entities` (declared here: packs meet by shape, not by import). */
export interface VaultEntities {
  location(ctx: ToolContext): Promise<{ folder: string; real: string }>;
  find(ctx: ToolContext, type: 'note' | 'task', ref: string): Promise<{ type: 'note' | 'task'; id: string; title: string; path?: string } | null>;
  featureOn(ctx: ToolContext, feature: 'canvas'): Promise<boolean>;
}

/** What the calendar pack offers under `calendar.events`. */
export interface CalendarEvents {
  getEvent(ctx: ToolContext, id: string): Promise<{ id: string; title: string; start: string; end: string } | null>;
}

const apis = new Map<string, PackApi>();

export function register(api: PackApi): () => void {
  apis.set(api.dataDir, api);
  return () => {
    if (apis.get(api.dataDir) === api) apis.delete(api.dataDir);
  };
}

function apiOf(ctx: ToolContext): PackApi {
  const api = apis.get(ctx.dataDir);
  if (!api) throw new MemoError('TOOL_FAILED', 'The canvas pack is not active (its activate() has not run).');
  return api;
}

export function vaultService(ctx: ToolContext): VaultEntities {
  const v = apiOf(ctx).lookup<VaultEntities>('vault.entities');
  if (!v) throw new MemoError('TOOL_FAILED', 'The vault pack is not loaded, so there is no vault to keep canvases in. Enable it: memo plugins enable vault.');
  return v;
}

/** The calendar's events service, or undefined while the calendar pack is not loaded. */
export function optionalCalendar(ctx: ToolContext): CalendarEvents | undefined {
  const c = apiOf(ctx).lookup<Partial<CalendarEvents>>('calendar.events');
  return c && typeof c.getEvent === 'function' ? (c as CalendarEvents) : undefined;
}

export function calendarService(ctx: ToolContext): CalendarEvents {
  const c = optionalCalendar(ctx);
  if (!c)
    throw new MemoError('TOOL_FAILED', 'The calendar pack is not loaded or does not offer events (calendar.events), so an event cannot be put on a canvas.');
  return c;
}

/** The vault service, after checking the Spatial Canvas feature is on: every canvas tool starts here. */
export async function canvasVault(ctx: ToolContext): Promise<VaultEntities> {
  const v = vaultService(ctx);
  if (!(await v.featureOn(ctx, 'canvas'))) {
    throw new MemoError(
      'TOOL_DISABLED',
      'The Spatial Canvas feature is switched off in this vault\'s settings, so canvas tools are not available. A person can turn it on (vault_desktop_write settings.setFeaturesSettings [{"canvas": true}]).',
      { details: { feature: 'canvas' } },
    );
  }
  return v;
}

export const versionOf = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16);

/** A canvas as read from disk, with what a write must check against. */
export interface LoadedCanvas {
  /** Path inside the vault, with the extension (`Plans/Roadmap.excalidraw`): how canvases are named in results. */
  name: string;
  /** Path from the workspace root, as the sandbox takes it. */
  file: string;
  resolved: ResolvedPath;
  version: string;
  scene: SceneFile;
  bytes: number;
}

/** A canvas name as given (`Roadmap`, `Plans/Roadmap.excalidraw`) as a path inside the vault. */
export function canvasPath(name: string): string {
  const clean = name.trim().replace(/\\/g, '/').replace(/^\/+/, '');
  if (!clean || clean.split('/').some((s) => s === '..' || s === '.' || s === ''))
    throw new MemoError('VALIDATION', `"${name}" is not a canvas name: give its name or its path inside the vault (Plans/Roadmap).`);
  return clean.toLowerCase().endsWith(EXTENSION) ? clean : clean + EXTENSION;
}

/** Every `.excalidraw` file in the vault, as paths inside it (hidden folders skipped). */
export async function listCanvasFiles(ctx: ToolContext, vault: { real: string }): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    if (ctx.sandbox.kernelArea(dir) !== null) return;
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path.join(dir, e.name), r);
      else if (e.isFile() && e.name.toLowerCase().endsWith(EXTENSION)) out.push(r);
    }
  };
  await walk(vault.real, '');
  return out.sort((a, b) => a.localeCompare(b));
}

/** Finds a canvas by path, or by name alone when exactly one canvas has it. NOT_FOUND names what there is. */
async function findCanvas(ctx: ToolContext, vault: { folder: string; real: string }, name: string): Promise<string> {
  const rel = canvasPath(name);
  const exists = await lstat(path.join(vault.real, rel)).then(
    () => true,
    () => false,
  );
  if (exists) return rel;
  const all = await listCanvasFiles(ctx, vault);
  const base = path.posix.basename(rel).toLowerCase();
  const same = rel.includes('/') ? [] : all.filter((c) => path.posix.basename(c).toLowerCase() === base);
  if (same.length === 1) return same[0]!;
  const known = all.length
    ? ` Canvases: ${all.slice(0, 20).join(', ')}${all.length > 20 ? ', ...' : ''}.`
    : ' There are no canvases yet (vault_create_canvas makes one).';
  if (same.length > 1) throw new MemoError('VALIDATION', `"${name}" names ${same.length} canvases; give its path: ${same.join(', ')}.`);
  throw new MemoError('NOT_FOUND', `There is no canvas "${name}" in the vault.${known}`, { details: { canvas: name } });
}

export async function loadCanvas(ctx: ToolContext, vault: VaultEntities, name: string, intent: 'read' | 'write'): Promise<LoadedCanvas> {
  const loc = await vault.location(ctx);
  const rel = await findCanvas(ctx, loc, name);
  const file = path.posix.join(loc.folder.split(path.sep).join('/'), rel);
  const resolved = await ctx.sandbox.resolve(file, intent);
  const { handle, size } = await ctx.sandbox.openResolvedForRead(resolved);
  let text: string;
  try {
    text = (await handle.readFile()).toString('utf8');
  } finally {
    await handle.close();
  }
  return { name: rel, file, resolved, version: versionOf(text), scene: parseScene(text, rel), bytes: size };
}

// ---------------------------------------------------------------------------------------------
// Concurrency: a write goes ahead only over the file it was computed from.

const previewed = new WeakMap<ToolContext, string>();

/** Remembers the version the preview of this call was computed from. */
export function rememberPreview(ctx: ToolContext, loaded: LoadedCanvas): void {
  previewed.set(ctx, loaded.version);
}

/** Refuses a write whose canvas changed since the caller's read or since the preview was shown. */
export function checkVersion(ctx: ToolContext, loaded: LoadedCanvas, expected: string | undefined): void {
  if (expected !== undefined && expected !== loaded.version) {
    throw new MemoError(
      'CONFLICT',
      `${loaded.name} changed since it was read (version ${expected}, now ${loaded.version}), so nothing was written. Read it again (vault_read_canvas_elements) and retry.`,
      { details: { canvas: loaded.name, expected, current: loaded.version } },
    );
  }
  const seen = previewed.get(ctx);
  if (seen !== undefined && seen !== loaded.version) {
    throw new MemoError('CONFLICT', `${loaded.name} changed after the preview was shown, so nothing was written. Look at it again and retry.`, {
      details: { canvas: loaded.name },
    });
  }
}

/** A canvas this large may be too large for the desktop app to sync; the result says so. */
const SYNC_LIMIT_BYTES = 10 * 1024 * 1024;

export function sizeWarning(bytes: number): { too_large_to_sync: true; bytes: number } | Record<string, never> {
  return bytes > SYNC_LIMIT_BYTES ? { too_large_to_sync: true, bytes } : {};
}

/**
 * Writes a scene atomically over the file `loaded` was read from (or as a new file when `loaded.version`
 * is 'absent'), checking just before the rename that nobody changed it meanwhile. Returns the new version.
 */
export async function saveCanvas(loaded: Pick<LoadedCanvas, 'name' | 'resolved' | 'version'>, scene: SceneFile): Promise<{ version: string; bytes: number }> {
  const text = serializeScene(scene);
  const real = loaded.resolved.real;
  await writeFileAtomicAsync(real, text, {
    mode: null,
    steps: {
      beforeRename: async () => {
        if ((await realpath(path.dirname(real))) !== path.dirname(real))
          throw new MemoError('CONFLICT', `The folder of ${loaded.name} changed while it was being written. Nothing was written.`);
        let now: string;
        try {
          now = versionOf(await readFile(real, 'utf8'));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
          now = 'absent';
        }
        if (now !== loaded.version) {
          throw new MemoError(
            'CONFLICT',
            loaded.version === 'absent'
              ? `${loaded.name} appeared while it was being written, so nothing was written.`
              : `${loaded.name} changed while it was being written, so nothing was written (the other change is kept). Read it again and retry.`,
            { details: { canvas: loaded.name } },
          );
        }
      },
    },
  });
  return { version: versionOf(text), bytes: Buffer.byteLength(text) };
}
