import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { readSimpleFrontmatter } from '../../../kernel/skills/frontmatter.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** The front matter of every SKILL.md in the repository (bundled skills and test fixtures). */
function repositorySkills(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const base of ['skills', 'test/fixtures']) {
    for (const rel of fs.readdirSync(path.join(ROOT, base), { recursive: true, encoding: 'utf8' })) {
      if (path.basename(rel) !== 'SKILL.md') continue;
      const text = fs.readFileSync(path.join(ROOT, base, rel), 'utf8').replace(/\r\n/g, '\n');
      const end = text.indexOf('\n---', 4);
      if (text.startsWith('---\n') && end > 0) out.push([path.join(base, rel), text.slice(4, end)]);
    }
  }
  return out;
}

/** What the full parser says: its value, or that it refuses. */
function full(yaml: string): { value: unknown } | { error: true } {
  try {
    return { value: parseYaml(yaml) as unknown };
  } catch {
    return { error: true };
  }
}

/** The quick reader either declines or reads exactly what the full parser reads. */
function expectAgrees(yaml: string): boolean {
  const quick = readSimpleFrontmatter(yaml);
  if (quick === undefined) return false;
  expect({ yaml, result: full(yaml) }).toStrictEqual({ yaml, result: { value: quick } });
  return true;
}

describe('the quick front-matter reader', () => {
  const files = repositorySkills();

  it('reads every bundled skill itself, exactly as the yaml package does', () => {
    const bundled = files.filter(([file]) => file.startsWith('skills'));
    expect(bundled.length).toBeGreaterThanOrEqual(2);
    for (const [, yaml] of bundled) expect(expectAgrees(yaml)).toBe(true);
  });

  it('agrees with the yaml package on every SKILL.md in the repository it reads', () => {
    expect(files.length).toBeGreaterThan(2);
    for (const [, yaml] of files) expectAgrees(yaml);
  });

  it.each([
    ['a comment', 'name: x # the name\ndescription: d'],
    ['a comment line', '# about\nname: x\ndescription: d'],
    ['a block scalar', 'description: |\n  line one\n  line two'],
    ['a folded scalar', 'description: >\n  folded'],
    ['a multi-line plain scalar', 'description: one\n  two'],
    ['an anchor and alias', 'description: &d text\nlicense: *d'],
    ['a tag', 'description: !!str 12'],
    ['an escape in double quotes', 'description: "a\\tb"'],
    ['a quote in single quotes', "description: 'it''s'"],
    ['a float', 'description: d\nversion: 1.5'],
    ['a negative number', 'description: d\nversion: -1'],
    ['a leading-zero number', 'description: d\nversion: 007'],
    ['a null', 'description: d\nlicense: null'],
    ['an empty value', 'description: d\nlicense:'],
    ['a capitalised boolean', 'description: d\nflag: True'],
    ['a flow mapping', 'description: d\nmetadata: { a: b }'],
    ['a quoted key', '"description": d'],
    ['a duplicate key', 'description: d\ndescription: e'],
    ['a tab', 'description:\td'],
    ['a list in the key column', 'description: d\ntools:\n- name: x'],
    ['a colon and space inside a plain scalar', 'description: a: b'],
    ['a __proto__ key', 'description: d\n__proto__: x'],
    ['a top level that is not a mapping', '- a\n- b'],
    ['an indented top level', '  description: d'],
    ['nothing', ''],
  ])('leaves %s to the full parser', (_what, yaml) => {
    expect(readSimpleFrontmatter(yaml)).toBeUndefined();
  });

  it('reads nested lists of mappings, flow lists, quoted strings, integers and booleans as the yaml package does', () => {
    const yaml = [
      'name: demo',
      'description: Reads a file - carefully, with care. Use when asked; "quotes" and C# stay',
      "license: 'MIT'",
      'metadata:',
      '  version: "1.0.0"',
      'allowed-tools: [read_file, list_directory]',
      'tools:',
      '  - name: t',
      '    description: x',
      '    command: "git log -n {limit} -- {path}"',
      '    parameters:',
      '      type: object',
      '      properties:',
      '        limit: { type: integer }',
      '      required: [limit]',
    ].join('\n');
    // The flow mapping makes it the full parser's; without it the quick reader takes it.
    expect(readSimpleFrontmatter(yaml)).toBeUndefined();
    const simple = yaml.replace('limit: { type: integer }', 'limit:\n          type: integer\n          minimum: 1\n          open: true');
    expect(expectAgrees(simple)).toBe(true);
  });

  it('keeps a no-break space as the yaml package does (only spaces are trimmed)', () => {
    expect(expectAgrees('description: d\u00a0\nlicense: \u00a0MIT')).toBe(true);
  });

  it('declines or agrees on thousands of small edits of the repository files', () => {
    // A fixed pseudo-random sequence, so a failure repeats.
    let seed = 24;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const inserts = [
      ' ',
      '  ',
      ':',
      ': ',
      '#',
      ' #',
      '-',
      '- ',
      '"',
      "'",
      '[',
      ']',
      ',',
      '\n',
      '\n  ',
      '0',
      '12',
      'a',
      '{',
      '&',
      '*',
      '!',
      '|',
      '>',
      '~',
      '.',
      '?',
      '%',
      '\\',
      'true',
      'null',
      '\u00a0',
      'é',
    ];
    let read = 0;
    for (let n = 0; n < 3000; n++) {
      const [, yaml] = files[next(files.length)]!;
      const at = next(yaml.length + 1);
      const edited = next(3) === 0 ? yaml.slice(0, at) + yaml.slice(at + 1 + next(3)) : yaml.slice(0, at) + inserts[next(inserts.length)]! + yaml.slice(at);
      if (expectAgrees(edited)) read++;
    }
    // Most edits keep the common shape: the comparison above is not empty.
    expect(read).toBeGreaterThan(500);
  });
});
