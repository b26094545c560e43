import * as fs from 'node:fs';
import * as path from 'node:path';
import { readSkill } from '../../../kernel/skills/skill.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';

const manifest = (id: string, tools: Array<Record<string, unknown>>) => ({ id, name: id, version: '1.0.0', description: 'd', main: 'index.js', tools });
const readTool = (name: string) => ({ name, description: 'd', parameters: { type: 'object' }, danger: 'safe', effect: 'read' });

function writePack(base: string, id: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(base, id, name)), { recursive: true });
    fs.writeFileSync(path.join(base, id, name), text);
  }
}

describe('errors that point at the problem', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  async function load(base: string): Promise<Record<string, string | undefined>> {
    fx = makeKernel({ packs: [] });
    const states = await fx.kernel.loadPacks([{ dir: base, source: 'extra' }]);
    return Object.fromEntries(states.map((s) => [s.id, s.error]));
  }

  it('names the file, line and column of a syntax error in a file the main module imports, and shows the line with a caret', async () => {
    const base = tempDir('memo-located-');
    writePack(base, 'broken-helper', {
      'plugin.json': JSON.stringify(manifest('broken-helper', [readTool('bh_tool')])),
      'index.js': "import { greet } from './lib/helper.js';\nexport const tools = { bh_tool: () => greet() };\n",
      'lib/helper.js': 'export function greet() {\n  return ["a" "b"];\n}\n',
    });
    const errors = await load(base);
    const error = errors['broken-helper']!;
    expect(error).toMatch(/^its code failed to load: lib\/helper\.js:2:15: SyntaxError: /);
    expect(error).toContain('> 2 |   return ["a" "b"];\n    |               ^');
  });

  it('names the line of the pack code that threw while loading', async () => {
    const base = tempDir('memo-located-');
    writePack(base, 'throws-late', {
      'plugin.json': JSON.stringify(manifest('throws-late', [readTool('tl_tool')])),
      'index.js': 'export const tools = { tl_tool: () => 1 };\nconst settings = undefined;\nsettings.read();\n',
    });
    const error = (await load(base))['throws-late']!;
    expect(error).toMatch(/^its code failed to load: index\.js:3:10: TypeError: Cannot read properties of undefined/);
    expect(error).toContain('> 3 | settings.read();');
  });

  it('gives the line and column of bad JSON in plugin.json instead of a character position', async () => {
    const base = tempDir('memo-located-');
    writePack(base, 'bad-json', { 'plugin.json': '{\n  "id": "bad-json",\n  "name": "x"\n  "version": "1.0.0"\n}\n', 'index.js': '' });
    const error = (await load(base))['bad-json']!;
    expect(error).toMatch(/^plugin\.json is not valid JSON at line 4, column 3: /);
    expect(error).not.toMatch(/position/);
    expect(error).toContain('> 4 |   "version": "1.0.0"');
  });

  it('names tools by name in manifest schema errors, with the value found and what is allowed', async () => {
    const base = tempDir('memo-located-');
    const tools = [readTool('fine_tool'), { ...readTool('read_notes'), danger: 'risky' }, { ...readTool('Bad Name'), effect: 'peek' }];
    writePack(base, 'schema-errors', { 'plugin.json': JSON.stringify(manifest('schema-errors', tools)), 'index.js': '' });
    const error = (await load(base))['schema-errors']!;
    expect(error).toContain('tool "read_notes": danger must be one of safe, medium, dangerous (got "risky")');
    expect(error).toContain('tool "Bad Name": name must match pattern ^[A-Za-z0-9_-]{1,64}$ (got "Bad Name")');
    expect(error).toContain('tool "Bad Name": effect must be one of read, write, delete (got "peek")');
    expect(error).not.toContain('/tools/');
  });

  it('gives the line and column of broken YAML in SKILL.md frontmatter, counted in the file', () => {
    const dir = path.join(tempDir('memo-located-'), 'yaml-skill');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'SKILL.md'), '---\nname: yaml-skill\ndescription: [unclosed\n---\nbody\n');
    let err: any;
    try {
      readSkill(dir);
    } catch (e) {
      err = e;
    }
    expect(err.message).toMatch(/not valid YAML at SKILL\.md line \d+, column \d+/);
    expect(err.problems[0]).toMatchObject({ file: 'SKILL.md', line: expect.any(Number), column: expect.any(Number) });
    expect(err.problems[0].line).toBeGreaterThanOrEqual(3);
  });

  it('names a skill tool by name with every problem of every tool', () => {
    const dir = path.join(tempDir('memo-located-'), 'two-bad');
    fs.mkdirSync(dir);
    fs.writeFileSync(
      path.join(dir, 'SKILL.md'),
      [
        '---',
        'name: two-bad',
        'description: d',
        'tools:',
        '  - name: first_tool',
        '    description: d',
        '    command: "cat {missing}"',
        '    parameters: { type: object }',
        '  - name: second_tool',
        '    description: d',
        '    command: "ls | wc"',
        '    parameters: { type: object }',
        '---',
        'body',
      ].join('\n'),
    );
    let err: any;
    try {
      readSkill(dir);
    } catch (e) {
      err = e;
    }
    expect(err.problems.map((p: any) => p.tool)).toEqual(['first_tool', 'second_tool']);
    expect(err.message).toMatch(/tool first_tool: .*; tool second_tool: /);
  });
});
