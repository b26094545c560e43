#!/usr/bin/env node
// The package as a host app gets it: packed, installed from its tarball in an empty folder, run and
// compiled against. Needs the npm registry (the tarball's dependencies) and a few minutes; .ci/run runs
// it as its own step after npm test. `node scripts/check-package.mjs [--keep]` (--keep leaves the temp
// folder). Every check prints what it checks; any failure ends the run with exit 1.
//
//  1. `npm pack` (its prepare builds dist/): the tarball holds bin/, dist/ with the copied assets (each
//     built-in pack's plugin.json, the console UI, skills, the sandbox bridge and heavy worker), README
//     package.json, and the docs' Markdown pages and screenshots (every link of README.md and the docs
//     leads to a file in the tarball); no sources, tests, bench or source maps. Prints its file count and size.
//  2. `npm install <tarball>` in an empty folder: no install step needs the checkout (npm runs no prepare
//     for a tarball), and none of the optional packages comes along (node-llama-cpp with its GPU builds,
//     Excalidraw's renderer and fonts, Excalidraw's editor). Prints the installed size.
//  3. `npx memo serve --json` answers: its JSON line, MCP initialize + tools/list + tools/call with the
//     bearer token, the console's one-time link (cookie) and a console API read and a vendored module;
//     then SIGTERM and a clean exit.
//  4. The canvas pack without its optional packages: a shape is still made by Excalidraw's code, and
//     measuring text and rendering fail with the message naming the `npm install` for this project.
//  5. The embedding tutorial's host (docs/tutorials/embedding.md: its ```ts [src/...] files: createKernel
//     with a replaced audit sink, loadPacks of built-in ids, a tool call whose approval is answered in
//     code; no MODEL_URL here, so no agent turn), with the types of every public entry, compiles under `strict` without
//     `skipLibCheck` (typescript and @types/node only; with the DOM library and without) and runs; a
//     misspelt built-in pack id does not compile.
//  6. The consumer-side setting for node-llama-cpp: with the overrides docs/guides/install.md gives, installing
//     node-llama-cpp resolves its CUDA and Vulkan packages to the empty package (lockfile only: no
//     download); without them it would not.
/* global fetch */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deadPackageLinks, isShippedDoc, requiredPackageFiles } from './package-files.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const keep = process.argv.includes('--keep');
const work = mkdtempSync(join(tmpdir(), 'memo-package-'));
const started = Date.now();
let failures = 0;
const children = [];

const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(2)} MB`;

function check(what, ok, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
  if (!ok) failures++;
  return ok;
}

function step(title) {
  console.log(`\n== ${title} (${secs(Date.now() - started)})`);
}

/** Runs a command, its output captured; throws with the output when it fails (unless allowed). */
function run(cmd, args, cwd, { allowFail = false, env } = {}) {
  const t = Date.now();
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...env } });
  const took = Date.now() - t;
  if (r.status !== 0 && !allowFail) {
    throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal}) in ${cwd}:\n${r.stdout}\n${r.stderr}`);
  }
  return { ...r, took };
}

const duMb = (dir) => Number(execFileSync('du', ['-sm', dir], { encoding: 'utf8' }).split('\t')[0]);

function finish() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) killGroup(c, 'SIGKILL');
  if (keep) console.log(`\nkept ${work}`);
  else rmSync(work, { recursive: true, force: true });
  console.log(`\ncheck-package: ${failures ? `${failures} check(s) failed` : 'all checks passed'} in ${secs(Date.now() - started)}`);
  process.exit(failures ? 1 : 0);
}

function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

try {
  // ---------------------------------------------------------------------------------------------
  step('1. npm pack (prepare builds dist/)');
  const packDir = join(work, 'pack');
  mkdirSync(packDir);
  const packed = run('npm', ['pack', '--json', '--pack-destination', packDir], root);
  const info = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[')))[0];
  const tarball = join(packDir, info.filename);
  const files = info.files.map((f) => f.path);
  console.log(`tarball ${info.filename}: ${info.entryCount} files, ${mb(info.size)} packed, ${mb(info.unpackedSize)} unpacked (npm pack ${secs(packed.took)})`);
  const byTop = {};
  for (const f of files) {
    const top = f
      .split('/')
      .slice(0, f.startsWith('dist/') ? 2 : 1)
      .join('/');
    byTop[top] = (byTop[top] ?? 0) + 1;
  }
  console.log(
    `  ${Object.entries(byTop)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  const has = (f) => files.includes(f);
  const wanted = requiredPackageFiles(root);
  const missing = wanted.filter((f) => !has(f));
  check(
    `holds bin/, the compiled kernel, the public .d.ts and every copied asset (${wanted.filter((f) => f.endsWith('/plugin.json')).length} packs' plugin.json, console UI, sandbox bridge, heavy worker)`,
    !missing.length,
    missing.join(', '),
  );
  check(
    'holds the built-in skills',
    files.some((f) => f.startsWith('dist/skills/') && f.endsWith('SKILL.md')),
  );
  const stray = files.filter(
    (f) =>
      /^(test|bench|kernel|plugins|scripts|skills|node_modules|data)\//.test(f) ||
      (f.startsWith('docs/') && !isShippedDoc(f)) ||
      f.startsWith('dist/bench/') ||
      f.endsWith('.map') ||
      (f.endsWith('.ts') && !f.endsWith('.d.ts')),
  );
  check('holds no sources, tests, bench, scripts or source maps', !stray.length, stray.slice(0, 5).join(', '));
  const docs = files.filter((f) => f.startsWith('docs/'));
  const dead = deadPackageLinks(files, (f) => readFileSync(join(root, f), 'utf8'));
  check(
    `holds the docs (${docs.filter((f) => f.endsWith('.md')).length} Markdown pages, ${docs.filter((f) => f.endsWith('.png')).length} screenshots): every link of README.md and the docs leads to a file in the tarball (TypeDoc's API pages excepted: npm run docs builds them in a checkout)`,
    docs.length > 0 && !dead.length,
    dead.slice(0, 5).join(', '),
  );

  // ---------------------------------------------------------------------------------------------
  step('2. npm install <tarball> in an empty folder');
  const app = join(work, 'host-app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'host-app', version: '1.0.0', private: true, type: 'module' }, null, 2) + '\n');
  const installed = run('npm', ['install', '--no-audit', '--no-fund', tarball], app);
  console.log(`npm install took ${secs(installed.took)}`);
  const nm = join(app, 'node_modules');
  const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8'));
  const names = Object.keys(lock.packages).filter(Boolean);
  const installedMb = duMb(nm);
  console.log(`installed: ${names.length} packages in the lockfile, node_modules ${installedMb} MB (memo-kernel itself ${duMb(join(nm, 'memo-kernel'))} MB)`);
  check(
    'the installed package has its compiled code (no build step ran or was needed)',
    existsSync(join(nm, 'memo-kernel', 'dist', 'kernel', 'cli', 'main.js')),
  );
  const optional = Object.keys(pkg.peerDependencies ?? {});
  const leaked = names.filter((n) => /node_modules\/(@node-llama-cpp\/|node-llama-cpp$|@excalidraw\/(utils|excalidraw)$|mermaid$|react$)/.test(n));
  check(
    `none of the optional packages came along (${optional.join(', ')}; no @node-llama-cpp GPU builds; no Excalidraw editor)`,
    !leaked.length,
    leaked.join(', '),
  );
  check('every optional peer is marked optional', optional.length > 0 && optional.every((n) => pkg.peerDependenciesMeta?.[n]?.optional === true));

  // ---------------------------------------------------------------------------------------------
  step('3. npx memo serve --json answers');
  const site = join(app, 'site');
  mkdirSync(site);
  const serve = spawn('npx', ['--no-install', 'memo', 'serve', '--json'], { cwd: site, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(serve);
  let out = '';
  let err = '';
  serve.stdout.on('data', (d) => (out += d));
  serve.stderr.on('data', (d) => (err += d));
  const exited = new Promise((resolve) => serve.on('exit', (code, signal) => resolve(code ?? signal)));
  const t0 = Date.now();
  while (!out.includes('\n') && Date.now() - t0 < 180_000 && serve.exitCode === null) await new Promise((r) => setTimeout(r, 100));
  const line = out.split('\n')[0];
  let served = null;
  try {
    served = JSON.parse(line);
  } catch {
    // reported below
  }
  if (
    !check(
      `memo serve printed its JSON line (${secs(Date.now() - t0)} after start)`,
      served !== null && typeof served.url === 'string',
      served ? '' : `stdout: ${out.slice(0, 300)} stderr: ${err.slice(-600)}`,
    )
  )
    throw new Error('memo serve did not start');
  console.log(`  ${served.url}, ${served.tools} tools, profile ${served.profile}`);

  const mcp = async (body, session) => {
    const r = await fetch(served.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        Authorization: `Bearer ${served.token}`,
        ...(session ? { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-11-25' } : {}),
      },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    const data = /^data: (.*)$/m.exec(text);
    return { status: r.status, session: r.headers.get('mcp-session-id'), message: text ? JSON.parse(data ? data[1] : text) : null };
  };
  const init = await mcp({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'check-package', version: '1.0.0' } },
  });
  check('MCP initialize with the bearer token', init.status === 200 && init.message?.result?.serverInfo !== undefined && !!init.session, `HTTP ${init.status}`);
  await mcp({ jsonrpc: '2.0', method: 'notifications/initialized' }, init.session);
  const list = await mcp({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, init.session);
  const toolNames = (list.message?.result?.tools ?? []).map((t) => t.name);
  check('MCP tools/list', toolNames.includes('read_file') && toolNames.includes('vault_render_canvas'), `${toolNames.length} tools`);
  writeFileSync(join(site, 'hello.txt'), 'Hello from the tarball\n');
  const call = await mcp({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'read_file', arguments: { path: 'hello.txt' } } }, init.session);
  check('MCP tools/call read_file', JSON.stringify(call.message?.result ?? {}).includes('Hello from the tarball'), JSON.stringify(call.message).slice(0, 200));
  const unauth = await fetch(served.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  check('MCP without the token is refused', unauth.status === 401, `HTTP ${unauth.status}`);

  const login = await fetch(served.console, { redirect: 'manual' });
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0];
  check('console one-time link sets the session cookie', login.status === 303 && cookie.includes('='), `HTTP ${login.status}`);
  const base = new URL(served.console).origin;
  const page = await fetch(`${base}/ui/`, { headers: { Cookie: cookie } });
  check('console page', page.status === 200 && (await page.text()).includes('<html'), `HTTP ${page.status}`);
  const packs = await fetch(`${base}/ui/api/packs`, { headers: { Cookie: cookie } });
  const packsBody = await packs.text();
  check(
    'console API (packs) with the cookie',
    packs.status === 200 && packsBody.includes('"canvas"') && packsBody.includes('"console"'),
    `HTTP ${packs.status}`,
  );
  const vendor = await fetch(`${base}/ui/vendor/preact.mjs`);
  check("console's vendored modules resolve from the host app's node_modules", vendor.status === 200, `HTTP ${vendor.status}`);

  // memo's own process (the pid its JSON line gives; npx exits with its code).
  process.kill(served.pid, 'SIGTERM');
  const how = await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running after 30 s'), 30_000))]);
  check('memo serve stops on SIGTERM with exit 0', how === 0, String(how));

  // ---------------------------------------------------------------------------------------------
  step('4. the canvas pack without its optional packages');
  const canvasDir = join(nm, 'memo-kernel', 'dist', 'plugins', 'canvas');
  const probe = join(app, 'canvas-probe.mjs');
  writeFileSync(
    probe,
    `import { excalidraw, withWindow } from ${JSON.stringify(pathToFileURL(join(canvasDir, 'excalidraw-node.js')).href)};
import { render } from ${JSON.stringify(pathToFileURL(join(canvasDir, 'render.js')).href)};
const ex = await excalidraw();
const shapes = withWindow(() => ex.convertToExcalidrawElements([{ type: 'rectangle', x: 0, y: 0, width: 100, height: 50 }], { regenerateIds: true }));
let text = null;
try { withWindow(() => ex.convertToExcalidrawElements([{ type: 'text', x: 0, y: 0, text: 'Hi' }], { regenerateIds: true })); } catch (e) { text = e.message; }
let rendered = null;
try { await render({ type: 'excalidraw', version: 2, elements: shapes, appState: {}, files: {} }, { format: 'svg' }); } catch (e) { rendered = e.message; }
console.log(JSON.stringify({ shape: shapes[0]?.type, text, rendered }));
`,
  );
  const probed = run('node', [probe], app, { allowFail: true });
  let canvas = null;
  try {
    canvas = JSON.parse(probed.stdout.trim().split('\n').pop());
  } catch {
    // reported below
  }
  const command = `npm install @excalidraw/utils@`;
  check("a rectangle is made by Excalidraw's element code", canvas?.shape === 'rectangle', probed.stderr.slice(-400));
  check(
    `measuring text says what to install: \`${command}...\` in this project`,
    !!canvas?.text && canvas.text.includes(command) && canvas.text.includes(app),
    canvas?.text ?? '',
  );
  check('rendering says what to install', !!canvas?.rendered && canvas.rendered.includes(command) && canvas.rendered.includes(app), canvas?.rendered ?? '');
  if (canvas?.rendered) console.log(`  ${canvas.rendered}`);

  // ---------------------------------------------------------------------------------------------
  step('5. a TypeScript host app under strict, without skipLibCheck');
  const ts = run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--save-dev', `typescript@${pkg.devDependencies.typescript}`, `@types/node@${pkg.devDependencies['@types/node']}`],
    app,
  );
  console.log(`typescript ${pkg.devDependencies.typescript} and @types/node ${pkg.devDependencies['@types/node']} installed in ${secs(ts.took)}`);
  mkdirSync(join(app, 'src'));
  // The embedding tutorial's source files (```ts [src/host.ts], [src/audit.ts]), as they stand, and every other public entry's types.
  const tutorial = readFileSync(join(root, 'docs', 'tutorials', 'embedding.md'), 'utf8');
  const sources = [...tutorial.matchAll(/^```ts \[src\/([\w.-]+\.ts)\]\n([\s\S]*?)^```$/gm)].map((m) => ({ name: m[1], text: m[2] }));
  const hasHost = sources.some((s) => s.name === 'host.ts');
  if (!check('docs/tutorials/embedding.md has the host (a ```ts [src/host.ts] block)', hasHost, sources.map((s) => s.name).join(', ')))
    throw new Error('no example');
  for (const { name, text } of sources) writeFileSync(join(app, 'src', name), text);
  writeFileSync(
    join(app, 'src', 'entries.ts'),
    `import type { PackApi, BuiltinPackId } from 'memo-kernel/pack';
import type { McpHttpEndpointOptions } from 'memo-kernel/mcp';
import type { TestKernelOptions } from 'memo-kernel/testing';
import type { AuditSink, ConversationStore, ProviderRegistry, Prompter, Clock, Logger } from 'memo-kernel';
export type Entries = [PackApi, BuiltinPackId, McpHttpEndpointOptions, TestKernelOptions, AuditSink, ConversationStore, ProviderRegistry, Prompter, Clock, Logger];
`,
  );
  writeFileSync(
    join(app, 'src', 'typo.ts'),
    `import { createKernel } from 'memo-kernel';
await createKernel({ root: process.cwd() }).loadPacks(['fs-toolz']);
`,
  );
  const tsconfig = (files, outDir, lib) => ({
    compilerOptions: {
      target: 'ES2022',
      ...(lib ? { lib } : {}),
      module: 'nodenext',
      moduleResolution: 'nodenext',
      strict: true,
      skipLibCheck: false,
      types: ['node'],
      rootDir: 'src',
      outDir,
    },
    files,
  });
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(tsconfig(['src/host.ts', 'src/entries.ts'], 'out'), null, 2));
  // A Node host often leaves the DOM library out: the public types must not need it either.
  writeFileSync(join(app, 'tsconfig.nodom.json'), JSON.stringify(tsconfig(['src/host.ts', 'src/entries.ts'], 'out-nodom', ['ES2023']), null, 2));
  writeFileSync(join(app, 'tsconfig.typo.json'), JSON.stringify(tsconfig(['src/typo.ts'], 'out-typo'), null, 2));
  const tsc = join(nm, 'typescript', 'bin', 'tsc');
  const compiled = run('node', [tsc, '-p', 'tsconfig.json'], app, { allowFail: true });
  check(
    `tsc --strict without skipLibCheck compiles the embedding tutorial's host and every public entry (${secs(compiled.took)})`,
    compiled.status === 0,
    (compiled.stdout + compiled.stderr).slice(0, 1500),
  );
  const nodom = run('node', [tsc, '-p', 'tsconfig.nodom.json'], app, { allowFail: true });
  check(`the same with lib ES2023 only, no DOM (${secs(nodom.took)})`, nodom.status === 0, (nodom.stdout + nodom.stderr).slice(0, 1500));
  if (compiled.status === 0) {
    mkdirSync(join(app, 'run'));
    const ran = run('node', [join(app, 'out', 'host.js')], join(app, 'run'), { allowFail: true });
    const said = ran.stdout.trim();
    const file = join(app, 'run', 'hello.txt');
    check(
      'the host runs: write_file asked, allowed once in code, and written',
      ran.status === 0 && said.includes('allowing write_file once') && existsSync(file) && readFileSync(file, 'utf8') === 'Hello, Ada!\n',
      said.replace(/\n/g, ' | ') || ran.stderr.slice(-400),
    );
  }
  const typo = run('node', [tsc, '-p', 'tsconfig.typo.json'], app, { allowFail: true });
  check("a misspelt built-in pack id ('fs-toolz') does not compile", typo.status !== 0 && /fs-toolz/.test(typo.stdout), typo.stdout.trim().split('\n')[0]);

  // ---------------------------------------------------------------------------------------------
  step('6. node-llama-cpp for a host app: the overrides the install guide gives');
  const gpu = Object.fromEntries(Object.entries(pkg.overrides).filter(([name]) => /cuda|vulkan/.test(name)));
  const readme = readFileSync(join(root, 'docs', 'guides', 'install.md'), 'utf8');
  const undocumented = Object.keys(gpu).filter((n) => !readme.includes(`"${n}": "${gpu[n]}"`));
  check(
    `docs/guides/install.md gives the ${Object.keys(gpu).length} GPU overrides a host app copies`,
    Object.keys(gpu).length === 6 && !undocumented.length,
    undocumented.join(', '),
  );
  const llama = `node-llama-cpp@${/\d+\.\d+\.\d+/.exec(pkg.peerDependencies['node-llama-cpp'])[0]}`;
  const resolved = {};
  for (const [label, overrides] of [
    ['with', gpu],
    ['without', null],
  ]) {
    const dir = join(work, `llama-${label}`);
    mkdirSync(dir);
    cpSync(join(app, 'package-lock.json'), join(dir, 'package-lock.json'));
    const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
    if (overrides) manifest.overrides = overrides;
    writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
    const r = run('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund', llama], dir);
    const pk = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')).packages;
    resolved[label] = Object.fromEntries(
      Object.keys(gpu).map((n) => [n, pk[`node_modules/${n}`] ? `${pk[`node_modules/${n}`].name ?? n}@${pk[`node_modules/${n}`].version}` : 'absent']),
    );
    resolved[label].cpu = pk['node_modules/@node-llama-cpp/linux-x64']?.version ?? 'absent';
    console.log(
      `  ${label} the overrides (npm install --package-lock-only ${llama}, ${secs(r.took)}): linux-x64-cuda -> ${resolved[label]['@node-llama-cpp/linux-x64-cuda']}, CPU build linux-x64 ${resolved[label].cpu}`,
    );
  }
  check(
    'with them, every CUDA and Vulkan package resolves to the empty package',
    Object.keys(gpu).every((n) => resolved.with[n].startsWith('empty-npm-package@')),
    JSON.stringify(resolved.with),
  );
  check(
    'without them, they would be the real builds',
    Object.keys(gpu).every((n) => resolved.without[n].startsWith('@node-llama-cpp/')),
    JSON.stringify(resolved.without),
  );
  check('the CPU build stays', resolved.with.cpu !== 'absent', resolved.with.cpu);
  console.log(
    `\nsummary: tarball ${info.entryCount} files, ${mb(info.size)} (${mb(info.unpackedSize)} unpacked); installed from it: ${names.length} packages, ${installedMb} MB; ${secs(Date.now() - started)}`,
  );
} catch (err) {
  check('the check ran to the end', false, err instanceof Error ? err.message : String(err));
}
finish();
