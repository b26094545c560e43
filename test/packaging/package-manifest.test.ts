/**
 * What `npm pack` ships and what a host app's install pulls, checked from package.json and the packed
 * file list (`npm pack --dry-run` on the dist/ npm test built). The full check, which installs the
 * tarball in an empty folder and runs and compiles against it, is scripts/check-package.mjs (.ci/run
 * runs it after npm test: it needs the registry and minutes).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BUILTIN_PACK_IDS } from '../../kernel/builtin-packs.js';
import { builtinPackIds } from '../../kernel/kernel.js';
import { CANVAS_EXTRAS } from '../../plugins/canvas/extras.js';
// @ts-expect-error: a plain ES module script without types.
import { deadPackageLinks, isShippedDoc, requiredPackageFiles } from '../../scripts/package-files.mjs';

const root = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  files: string[];
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  overrides: Record<string, string>;
};
const pluginFolders = fs
  .readdirSync(path.join(root, 'plugins'))
  .filter((d) => fs.existsSync(path.join(root, 'plugins', d, 'plugin.json')))
  .sort();

describe('the package', () => {
  it('types every built-in pack id: BUILTIN_PACK_IDS is the plugins/ folders with a plugin.json, and what builtinPackIds() finds', () => {
    expect([...BUILTIN_PACK_IDS].sort()).toEqual(pluginFolders);
    expect(builtinPackIds()).toEqual(pluginFolders);
  });

  const packed = () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' });
    return (JSON.parse(out.slice(out.indexOf('['))) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
  };

  it('ships bin/ and dist/ with its copied assets, and no sources, tests, bench or source maps', () => {
    expect(fs.existsSync(path.join(root, 'dist', 'kernel', 'index.js'))).toBe(true); // npm test builds first
    const files = packed();
    for (const f of requiredPackageFiles(root) as string[]) expect([f, files.includes(f)]).toEqual([f, true]);
    expect(files.filter((f) => f.startsWith('dist/skills/') && f.endsWith('SKILL.md')).length).toBeGreaterThan(0);
    const stray = files.filter(
      (f) =>
        /^(test|bench|kernel|plugins|scripts|skills)\//.test(f) ||
        (f.startsWith('docs/') && !isShippedDoc(f)) ||
        f.startsWith('dist/bench/') ||
        f.endsWith('.map'),
    );
    expect(stray).toEqual([]);
  });

  it("ships the docs' Markdown pages, so every link of its README and docs leads to a file in the package", () => {
    const files = packed();
    const tracked = execFileSync('git', ['ls-files', 'docs'], { cwd: root, encoding: 'utf8' }).trim().split('\n').filter(isShippedDoc);
    expect(tracked.length).toBeGreaterThan(40);
    expect(tracked.filter((f) => !files.includes(f))).toEqual([]);
    expect(files.filter((f) => f.startsWith('docs/')).sort()).toEqual(tracked.sort());
    expect(deadPackageLinks(files, (f: string) => fs.readFileSync(path.join(root, f), 'utf8'))).toEqual([]);
  });

  it('leaves the heavy optional packages out of the default install: optional peers, installed on demand', () => {
    const peers = Object.keys(pkg.peerDependencies).sort();
    expect(peers).toEqual([...CANVAS_EXTRAS, 'node-llama-cpp'].sort());
    for (const name of peers) {
      expect([name, pkg.peerDependenciesMeta[name]?.optional]).toEqual([name, true]);
      expect([name, pkg.dependencies[name]]).toEqual([name, undefined]);
    }
    // The checkout's own tests use node-llama-cpp and jsdom: devDependencies at the peer's tested version.
    expect(pkg.peerDependencies['node-llama-cpp']).toBe(`^${pkg.devDependencies['node-llama-cpp']}`);
    expect(pkg.peerDependencies.jsdom).toBe(`^${pkg.devDependencies.jsdom}`);
    // The editor is for the canvas tests only, from scripts/install-extras.mjs (canvas-editor).
    expect(pkg.devDependencies['@excalidraw/excalidraw']).toBeUndefined();
    // The extras script installs the same canvas packages the pack's message names.
    const script = fs.readFileSync(path.join(root, 'scripts', 'install-extras.mjs'), 'utf8');
    expect(script).toContain(`canvas: Object.fromEntries([${CANVAS_EXTRAS.map((n) => `'${n}'`).join(', ')}]`);
  });

  it("keeps node-llama-cpp's GPU and ARM builds and Baileys' sharp out of the checkout's install", () => {
    const empty = Object.entries(pkg.overrides)
      .filter(([, to]) => to === 'npm:empty-npm-package@1.0.0')
      .map(([name]) => name)
      .sort();
    expect(empty).toEqual([
      '@node-llama-cpp/linux-arm64',
      '@node-llama-cpp/linux-armv7l',
      '@node-llama-cpp/linux-x64-cuda',
      '@node-llama-cpp/linux-x64-cuda-ext',
      '@node-llama-cpp/linux-x64-vulkan',
      '@node-llama-cpp/win-x64-cuda',
      '@node-llama-cpp/win-x64-cuda-ext',
      '@node-llama-cpp/win-x64-vulkan',
      'sharp',
    ]);
  });
});
