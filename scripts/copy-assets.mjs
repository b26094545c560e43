// After tsc: copy each built-in pack's plugin.json (and any non-TypeScript files it ships) into
// dist/plugins/<id>/, so the compiled kernel finds manifests beside the compiled code. The console
// pack's front end (plugins/console/ui: plain ES modules, HTML and CSS served as they are, no
// bundler) goes with it.
import { cpSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const src = 'plugins';
const out = join('dist', 'plugins');
if (existsSync(src)) {
  for (const id of readdirSync(src)) {
    cpSync(join(src, id), join(out, id), {
      recursive: true,
      filter: (from) => !from.endsWith('.ts') || from.endsWith('.d.ts'),
    });
  }
}

// Built-in skills are plain files: copied whole.
if (existsSync('skills')) cpSync('skills', join('dist', 'skills'), { recursive: true });

// The OS sandbox's bridge runs by path inside the sandbox: a plain ES module beside the compiled code.
cpSync(join('kernel', 'sandbox', 'sandbox-bridge.mjs'), join('dist', 'kernel', 'sandbox', 'sandbox-bridge.mjs'));

// Heavy work's worker thread runs by path too.
cpSync(join('kernel', 'util', 'heavy-worker.mjs'), join('dist', 'kernel', 'util', 'heavy-worker.mjs'));
