import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../../helpers/dist.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');

/** Runs node with these arguments. */
function node(args: string[], cwd: string) {
  const res = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Runs bin/memo with these arguments. */
function run(args: string[], cwd: string) {
  return node([BIN, ...args], cwd);
}

/** A folder where `memo-kernel` (this checkout) is found by Node, as it would be after npm install. */
function authorFolder(): string {
  const base = tempDir('memo-author-');
  fs.mkdirSync(path.join(base, 'node_modules', '@types'), { recursive: true });
  fs.symlinkSync(path.resolve('.'), path.join(base, 'node_modules', 'memo-kernel'));
  fs.symlinkSync(path.resolve('node_modules/@types/node'), path.join(base, 'node_modules', '@types', 'node'));
  return base;
}

beforeAll(requireFreshBuild);

describe('memo plugins new, validate, types and memo skills validate', () => {
  it('scaffolds a pack that validates, passes its own node --test and loads with --packs', () => {
    const base = authorFolder();
    const made = run(['plugins', 'new', 'my-notes'], base);
    expect(made.code).toBe(0);
    // By default in packs/, a folder of packs of its own (a pack folder is closed to every tool).
    expect(made.stdout).toContain('Created packs/my-notes/: plugin.json');
    expect(made.stdout).toContain('(cd packs/my-notes && npm install && node --test)');
    expect(made.stdout).toContain('memo --packs packs tools list');
    // memo-kernel is not on the registry: the pack's npm install links this install (scripts/check-scaffold.mjs runs it for real).
    expect(JSON.parse(fs.readFileSync(path.join(base, 'packs', 'my-notes', 'package.json'), 'utf8'))).toMatchObject({
      scripts: { test: 'node --test' },
      devDependencies: { 'memo-kernel': `file:${path.resolve('.')}` },
    });
    const ok = run(['plugins', 'validate', 'packs/my-notes'], base);
    expect(ok).toMatchObject({ code: 0, stdout: 'OK pack my-notes 0.1.0: 2 tools (my_notes_list_notes, my_notes_add_note)\n' });
    const tested = node(['--test'], path.join(base, 'packs', 'my-notes'));
    expect(tested.stdout).toMatch(/# pass 2\n# fail 0/);
    expect(tested.code).toBe(0);
    const listed = run(['--packs', 'packs', 'tools', 'list', '--json'], base);
    expect(JSON.parse(listed.stdout).map((t: any) => t.name)).toEqual(expect.arrayContaining(['my_notes_add_note', 'my_notes_list_notes']));
  });

  it('scaffolds a TypeScript pack whose generated types compile and stay in step with plugin.json', () => {
    const base = authorFolder();
    expect(run(['plugins', 'new', 'ts-notes', '--ts'], base).code).toBe(0);
    const dir = path.join(base, 'packs', 'ts-notes');
    expect(fs.readFileSync(path.join(dir, 'index.ts'), 'utf8')).toContain('defineTools<ToolArgs>(');
    // npm install builds index.js (prepare) with the compiler and Node types this install was built with.
    const own = JSON.parse(fs.readFileSync('package.json', 'utf8'));
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))).toMatchObject({
      scripts: { prepare: 'tsc', test: 'tsc && node --test' },
      devDependencies: {
        'memo-kernel': `file:${path.resolve('.')}`,
        typescript: own.devDependencies.typescript,
        '@types/node': own.devDependencies['@types/node'],
      },
    });
    expect(run(['plugins', 'validate', 'packs/ts-notes'], base)).toMatchObject({
      code: 1,
      stdout: expect.stringContaining('index.js: does not exist: build it from index.ts'),
    });
    const tsc = node([path.resolve('node_modules/typescript/bin/tsc')], dir);
    expect(tsc.stdout).toBe('');
    expect(run(['plugins', 'validate', 'packs/ts-notes'], base).code).toBe(0);
    // The manifest changes; the types do not follow until regenerated.
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'plugin.json'), 'utf8'));
    manifest.tools[1].parameters = { type: 'object', properties: { body: { type: 'string' } }, required: ['body'], additionalProperties: false };
    fs.writeFileSync(path.join(dir, 'plugin.json'), JSON.stringify(manifest));
    expect(run(['plugins', 'validate', 'packs/ts-notes'], base).stdout).toContain('tool-args.ts: is out of date with plugin.json');
    expect(run(['plugins', 'types', 'packs/ts-notes'], base).code).toBe(0);
    const recompiled = node([path.resolve('node_modules/typescript/bin/tsc')], dir);
    expect(recompiled.stdout).toMatch(/index\.ts\(\d+,\d+\): error TS\d+: Property 'text' does not exist/);
  });

  it("says the pack is loaded where it is when it is made in the data folder's packs, instead of telling to copy it there", () => {
    const base = authorFolder();
    fs.mkdirSync(path.join(base, 'data', 'packs'), { recursive: true });
    const made = run(['--data', path.join(base, 'data'), 'plugins', 'new', 'here-notes', '--dir', path.join(base, 'data', 'packs', 'here-notes')], base);
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/memo tools list +# memo loads it from data\/packs\n/);
    expect(made.stdout).not.toContain('move it into');
  });

  it('made in the workspace itself, advises a folder of packs of its own, never --packs on the workspace', () => {
    const base = authorFolder();
    const made = run(['plugins', 'new', 'loose-notes', '--dir', 'loose-notes'], base);
    expect(made.code).toBe(0);
    expect(made.stdout).toContain('mkdir -p packs && mv loose-notes packs/ && memo --packs packs tools list');
    expect(made.stdout).toContain('memo --packs . would close ., your workspace, to every tool');
    expect(made.stdout).not.toMatch(/^ +memo --packs \. /m);
    // What it warns of: with --packs on the workspace, a file beside the pack is the kernel's.
    fs.writeFileSync(path.join(base, 'a.txt'), 'hi');
    expect(run(['--packs', '.', 'tools', 'call', 'read_file', '--args', '{"path":"a.txt"}'], base).stderr).toContain('PATH_PROTECTED');
  });

  it('refuses an id that is not kebab-case, a folder that is not empty and an id a pack already has', () => {
    const base = authorFolder();
    expect(run(['plugins', 'new', 'My_Pack'], base)).toMatchObject({ code: 2, stderr: expect.stringContaining('kebab-case') });
    fs.mkdirSync(path.join(base, 'packs', 'taken'), { recursive: true });
    fs.writeFileSync(path.join(base, 'packs', 'taken', 'x.txt'), 'x');
    expect(run(['plugins', 'new', 'taken'], base)).toMatchObject({ code: 2, stderr: expect.stringContaining('not an empty folder') });
    expect(run(['plugins', 'new', 'fs-tools'], base)).toMatchObject({ code: 2, stderr: expect.stringContaining('already exists') });
    expect(fs.existsSync(path.join(base, 'packs', 'fs-tools'))).toBe(false);
  });

  it('lists every problem of a broken pack, located, as JSON, and exits 1', () => {
    const base = authorFolder();
    run(['plugins', 'new', 'broken', '--dir', 'broken'], base);
    const dir = path.join(base, 'broken');
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'plugin.json'), 'utf8'));
    manifest.tools[0].effect = 'look';
    manifest.tools.push({ name: 'extra_tool', description: 'd', parameters: { type: 'object' }, danger: 'safe', effect: 'read' });
    fs.writeFileSync(path.join(dir, 'plugin.json'), JSON.stringify(manifest, null, 2));
    const r = run(['plugins', 'validate', 'broken', '--json'], base);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(false);
    expect(out.problems).toEqual(
      expect.arrayContaining([
        { file: 'plugin.json', tool: 'broken_list_notes', field: 'effect', message: 'must be one of read, write, delete (got "look")' },
        { file: 'index.js', tool: 'extra_tool', message: 'is declared in plugin.json but the code exports no handler for it' },
      ]),
    );
    fs.writeFileSync(
      path.join(dir, 'index.js'),
      fs.readFileSync(path.join(dir, 'index.js'), 'utf8').replace('return { notes, summary', 'return { notes summary'),
    );
    const syntax = JSON.parse(run(['plugins', 'validate', 'broken', '--json'], base).stdout);
    expect(syntax.problems).toContainEqual(expect.objectContaining({ file: 'index.js', line: expect.any(Number), column: expect.any(Number) }));
  });

  it('reports bad modes, keywords and examples with their field, and warns without failing about keywords that repeat the name', () => {
    const base = authorFolder();
    run(['plugins', 'new', 'my-search', '--dir', 'my-search'], base);
    const dir = path.join(base, 'my-search');
    const file = path.join(dir, 'plugin.json');
    const manifest = JSON.parse(fs.readFileSync(file, 'utf8'));
    manifest.tools[0].keywords = ['notes', 'memos', 'jottings'];
    manifest.tools[0].examples = ['what did I jot down yesterday'];
    fs.writeFileSync(file, JSON.stringify(manifest, null, 2));
    const warned = run(['plugins', 'validate', 'my-search'], base);
    expect(warned.code).toBe(0);
    expect(warned.stdout).toBe(
      'warning: plugin.json: tool "my_search_list_notes": keywords "notes" only repeats words of its name (tool search matches the name already): give other words a person would use\n' +
        'OK pack my-search 0.1.0: 2 tools (my_search_list_notes, my_search_add_note) (1 warning)\n',
    );

    fs.writeFileSync(
      file,
      JSON.stringify(
        {
          ...manifest,
          modes: ['desktop'],
          tools: [
            { ...manifest.tools[0], keywords: 'memos' },
            { ...manifest.tools[1], examples: [' '] },
          ],
        },
        null,
        2,
      ),
    );
    const r = run(['plugins', 'validate', 'my-search', '--json'], base);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).problems).toEqual([
      { file: 'plugin.json', tool: 'my_search_list_notes', field: 'keywords', message: 'must be array (got "memos")' },
      { file: 'plugin.json', tool: 'my_search_add_note', field: 'examples.0', message: 'must match pattern \\S (got " ")' },
      { file: 'plugin.json', field: 'modes.0', message: 'must be one of vault, web (got "desktop")' },
    ]);
  });

  it('exits 1 from plugins list when a pack failed to load', () => {
    const base = authorFolder();
    fs.mkdirSync(path.join(base, 'packs', 'no-manifest'), { recursive: true });
    const r = run(['--packs', path.join(base, 'packs'), '--data', path.join(base, 'data'), 'plugins', 'list', '--json'], base);
    expect(JSON.parse(r.stdout)).toContainEqual(expect.objectContaining({ id: 'no-manifest', status: 'failed' }));
    expect(r.code).toBe(1);
  });

  it('validates a skill folder: OK with its command tools, or each problem with exit 1', () => {
    const base = authorFolder();
    expect(run(['skills', 'validate', path.resolve('skills/git-history')], base)).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^OK skill git-history: 2 command tools/),
    });
    const dir = path.join(base, 'bad-skill');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'SKILL.md'), '---\nname: bad-skill\ndescription: [oops\n---\n');
    const r = run(['skills', 'validate', dir, '--json'], base);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).problems[0]).toMatchObject({ file: 'SKILL.md', line: expect.any(Number), column: expect.any(Number) });
  });
});
