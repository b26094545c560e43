/**
 * README's generated tool tables (the vault's tools in one list) match the packs' manifests: a tool
 * added, renamed or re-described without `node scripts/readme-tool-tables.mjs` fails here.
 */
import * as fs from 'node:fs';
// @ts-expect-error: a plain ES module script without types.
import { toolTable, withToolTables } from '../../scripts/readme-tool-tables.mjs';

describe("README's generated tool tables", () => {
  const readme = fs.readFileSync('README.md', 'utf8');

  it('holds the vault table, and every generated table is what the manifests say now', () => {
    expect(readme).toContain('<!-- tools:vault:start -->');
    expect(withToolTables(readme) === readme ? 'current' : 'stale: run node scripts/readme-tool-tables.mjs').toBe('current');
  });

  it('lists every vault tool by name, one row each, as plugin.json declares them', () => {
    const manifest = JSON.parse(fs.readFileSync('plugins/vault/plugin.json', 'utf8')) as { tools: Array<{ name: string }> };
    const table = toolTable('vault') as string;
    expect(
      table
        .split('\n')
        .slice(2)
        .map((row) => /^\| `([a-z_]+)`/.exec(row)?.[1]),
    ).toEqual(manifest.tools.map((t) => t.name));
  });
});
