/**
 * Excalidraw's renderer and fonts: optional packages, not installed with Memo by default (129 MB on
 * disk in a host app's project, measured; 113 MB in a checkout, which has jsdom for its tests). `@excalidraw/utils` carries Excalidraw's SVG export and the .ttf fonts it ships, `fontkit`
 * reads those fonts, `jsdom` is the DOM the export runs in and `@resvg/resvg-js` rasterises PNG.
 * Listing, reading and drawing shapes need none of them; anything that measures text (labels, cards,
 * text elements) needs the fonts, and rendering needs all four.
 *
 * They are found where Node finds any package (a host app's own node_modules, after the `npm install`
 * the message names), else in a checkout's extras folder (`npm run install:canvas` installs them in
 * node_modules/.memo-extras, out of the default tree). When one is missing, the call fails with a
 * message that names the command for this installation.
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MemoError } from 'memo-kernel/pack';

/** The packages rendering needs, in the order the install command names them (versions: memo-kernel's peerDependencies). */
export const CANVAS_EXTRAS = ['@excalidraw/utils', 'fontkit', 'jsdom', '@resvg/resvg-js'] as const;

/** A checkout's folder of optional packages (scripts/install-extras.mjs installs there). */
export const EXTRAS_FOLDER = path.join('node_modules', '.memo-extras');

interface MemoPackage {
  dir: string;
  peerDependencies?: Record<string, string>;
}

let found: MemoPackage | null | undefined;

/** memo-kernel's own folder and package.json: the nearest package.json named memo-kernel above this module. */
function memoPackage(): MemoPackage | null {
  if (found !== undefined) return found;
  found = null;
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown; peerDependencies?: Record<string, string> };
      if (pkg.name === 'memo-kernel') {
        found = { dir, ...(pkg.peerDependencies ? { peerDependencies: pkg.peerDependencies } : {}) };
        break;
      }
    } catch {
      // no package.json here: look further up
    }
  }
  return found;
}

/** `name@version` as memo-kernel's peerDependencies pin it (a range's lowest version: the one tested). */
function pinned(name: string, pkg: MemoPackage | null): string {
  const range = pkg?.peerDependencies?.[name];
  const version = range ? /\d+\.\d+\.\d+(?:-[\w.-]+)?/.exec(range)?.[0] : undefined;
  return version ? `${name}@${version}` : name;
}

/**
 * The command that installs the extras here, and the folder to run it in: `npm run install:canvas` in a
 * checkout, `npm install <packages>` in the project that depends on memo-kernel.
 */
export function installHint(pkg: MemoPackage | null = memoPackage()): { command: string; folder: string | null } {
  const install = `npm install ${CANVAS_EXTRAS.map((n) => pinned(n, pkg)).join(' ')}`;
  if (!pkg) return { command: install, folder: null };
  const parent = path.dirname(pkg.dir);
  // Installed as a dependency: <project>/node_modules/memo-kernel.
  if (path.basename(parent) === 'node_modules') return { command: install, folder: path.dirname(parent) };
  return { command: 'npm run install:canvas', folder: pkg.dir };
}

/** The error for a missing extra: what needs it, what is missing, and the command that installs it. */
export function missingExtra(name: string, purpose: string, pkg: MemoPackage | null = memoPackage()): MemoError {
  const { command, folder } = installHint(pkg);
  return new MemoError(
    'TOOL_FAILED',
    `${purpose} needs Excalidraw's renderer and fonts, which are not installed with Memo by default (${name} is missing): run \`${command}\`${folder ? ` in ${folder}` : ''}, then try again.`,
    { details: { missing: name, install: command, ...(folder ? { folder } : {}) } },
  );
}

const resolvers = new Map<string, NodeJS.Require>();

function resolverAt(file: string): NodeJS.Require {
  let r = resolvers.get(file);
  if (!r) resolvers.set(file, (r = createRequire(file)));
  return r;
}

/** Where `name` is installed (its entry file), or null: Node's own lookup first, then the checkout's extras folder. */
export function locateExtra(name: string): string | null {
  const tries = [fileURLToPath(import.meta.url)];
  const pkg = memoPackage();
  if (pkg) tries.push(path.join(pkg.dir, EXTRAS_FOLDER, 'package.json'));
  for (const from of tries) {
    try {
      return resolverAt(from).resolve(name);
    } catch {
      // not installed there
    }
  }
  return null;
}

/** The entry file of an extra, or the error that names the install command. */
export function requireExtra(name: string, purpose: string): string {
  const file = locateExtra(name);
  if (file === null) throw missingExtra(name, purpose);
  return file;
}

/** Imports an extra (typed by the caller: its own types are not a build dependency). */
export async function importExtra<T>(name: string, purpose: string): Promise<T> {
  return (await import(pathToFileURL(requireExtra(name, purpose)).href)) as T;
}
