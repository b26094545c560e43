#!/usr/bin/env node
// README's tables of a pack's tools (the vault's, in one list), generated from each plugin.json
// between <!-- tools:PACK:start --> and <!-- tools:PACK:end -->. `node scripts/readme-tool-tables.mjs`
// rewrites them; test/docs/readme-tool-tables.test.ts fails when README's copy differs from the
// manifests (a tool added, renamed or re-described without regenerating).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The first sentence of a description, for a table cell. */
function firstSentence(text) {
  const one = text.replace(/\s+/g, ' ').trim();
  const m = /^(.+?[.!?])(\s|$)/.exec(one);
  return (m ? m[1] : one).replace(/\|/g, '\\|');
}

/** The table of `pack`'s tools, as README holds it between its markers. */
export function toolTable(pack) {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'plugins', pack, 'plugin.json'), 'utf8'));
  const rows = manifest.tools.map(
    (t) => `| \`${t.name}\` | ${t.danger} | ${t.effect}${t.confirm === 'always' ? ', asks every time' : ''} | ${firstSentence(t.description)} |`,
  );
  return [`| tool | danger | effect | what it does |`, `|---|---|---|---|`, ...rows].join('\n');
}

const marker = (pack, end) => `<!-- tools:${pack}:${end ? 'end' : 'start'} -->`;

/** README's text with every marked table regenerated. */
export function withToolTables(readme) {
  return readme.replace(
    /<!-- tools:([a-z-]+):start -->[\s\S]*?<!-- tools:\1:end -->/g,
    (_m, pack) => `${marker(pack)}\n${toolTable(pack)}\n${marker(pack, true)}`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = path.join(ROOT, 'README.md');
  const before = fs.readFileSync(file, 'utf8');
  const after = withToolTables(before);
  if (after !== before) fs.writeFileSync(file, after);
  process.stdout.write(after === before ? 'README tool tables are current.\n' : 'README tool tables regenerated.\n');
}
