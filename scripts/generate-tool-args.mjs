// Before tsc: regenerate tool-args.ts (handler argument types, from plugin.json) for each built-in
// pack that has one, so the type check proves the handlers use what their manifests declare. The
// generator is the kernel's own (kernel/packs/tool-types.ts, the code behind `memo plugins types`),
// transpiled here on the fly since the kernel is not compiled yet.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

const source = readFileSync(join('kernel', 'packs', 'tool-types.ts'), 'utf8');
const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } });
const tmp = mkdtempSync(join(tmpdir(), 'memo-tool-types-'));
let generator;
try {
  writeFileSync(join(tmp, 'tool-types.mjs'), outputText);
  generator = await import(pathToFileURL(join(tmp, 'tool-types.mjs')).href);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const changed = [];
for (const id of existsSync('plugins') ? readdirSync('plugins').sort() : []) {
  const target = join('plugins', id, generator.TOOL_ARGS_FILE);
  if (!existsSync(target) || !existsSync(join('plugins', id, 'plugin.json'))) continue;
  const text = generator.generateToolArgs(JSON.parse(readFileSync(join('plugins', id, 'plugin.json'), 'utf8')));
  if (readFileSync(target, 'utf8') === text) continue;
  writeFileSync(target, text);
  changed.push(target);
}
if (changed.length) process.stdout.write(`tool-args: regenerated ${changed.join(', ')}\n`);
