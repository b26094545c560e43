// The files the memo-kernel package must ship (bin, the built kernel and its entries' types, the
// console's page, every built-in pack's manifest and code), for scripts/check-package.mjs and
// test/packaging/package-manifest.test.ts alike.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Paths relative to the package root, as `npm pack` lists them. */
export function requiredPackageFiles(root) {
  const builtin = readdirSync(join(root, 'plugins')).filter((d) => existsSync(join(root, 'plugins', d, 'plugin.json')));
  return [
    'package.json',
    'README.md',
    'bin/memo',
    'dist/kernel/index.js',
    'dist/kernel/index.d.ts',
    'dist/kernel/pack.d.ts',
    'dist/kernel/testing.d.ts',
    'dist/kernel/mcp/index.d.ts',
    'dist/kernel/cli/main.js',
    'dist/kernel/sandbox/sandbox-bridge.mjs',
    'dist/kernel/util/heavy-worker.mjs',
    'dist/plugins/console/ui/index.html',
    'dist/plugins/console/ui/app.js',
    'dist/plugins/console/ui/style.css',
    ...builtin.flatMap((id) => [`dist/plugins/${id}/plugin.json`, `dist/plugins/${id}/index.js`]),
  ];
}
