import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../../helpers/dist.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');
const FIXTURES = path.resolve('test/fixtures/skills-ecosystem');

/** Runs bin/memo in `cwd` with a home folder of its own (nothing is written to the real one). */
function memo(args: string[], cwd: string) {
  const res = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', env: { ...process.env, HOME: cwd }, stdio: ['ignore', 'pipe', 'pipe'] });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

beforeAll(requireFreshBuild);

describe('memo skills: opt-in folders, sources and warnings', () => {
  it('loads an opt-in folder only once added, lists its skills with their source and warnings, and stops after removal', () => {
    const project = tempDir('memo-skills-cli-');
    const data = path.join(project, 'data');
    const folder = path.join(project, '.claude', 'skills');
    fs.mkdirSync(folder, { recursive: true });
    fs.cpSync(path.join(FIXTURES, 'extra-keys'), path.join(folder, 'extra-keys'), { recursive: true });
    const names = () => (JSON.parse(memo(['--data', data, 'skills', 'list', '--json'], project).stdout) as Array<{ name: string }>).map((s) => s.name);
    // Never scanned by default.
    expect(names()).not.toContain('extra-keys');
    expect(memo(['--data', data, 'skills', 'folders'], project).stdout).toBe('No opt-in skill folders.\n');

    const added = memo(['--data', data, 'skills', 'folders', 'add', '.claude/skills'], project);
    expect(added).toMatchObject({ code: 0, stdout: expect.stringContaining(`added ${folder}`) });
    expect(JSON.parse(fs.readFileSync(path.join(data, 'skill-folders.json'), 'utf8'))).toEqual({ folders: [folder] });
    const listed = JSON.parse(memo(['--data', data, 'skills', 'list', '--json'], project).stdout) as Array<Record<string, unknown>>;
    expect(listed.find((s) => s.name === 'extra-keys')).toMatchObject({
      source: 'opt-in',
      status: 'loaded',
      dir: path.join(folder, 'extra-keys'),
      warnings: [expect.stringMatching(/^SKILL\.md:4:1: model is not a key/), expect.any(String), expect.any(String), expect.any(String)],
    });
    const table = memo(['--data', data, 'skills', 'list'], project).stdout;
    expect(table).toMatch(/extra-keys\s+opt-in\s+-\s+loaded, 4 warnings/);
    expect(table).toContain(`opt-in folders: ${folder}`);
    const shown = memo(['--data', data, 'skills', 'show', 'extra-keys'], project).stdout;
    expect(shown).toContain('Other keys (kept, not used):\n  model: "a-model-name"\n  argument-hint: "[version]"');
    expect(shown).toContain('Warnings:\n  SKILL.md:4:1: model is not a key this project reads');

    expect(memo(['--data', data, 'skills', 'folders', 'remove', '.claude/skills'], project).code).toBe(0);
    expect(names()).not.toContain('extra-keys');
    expect(memo(['--data', data, 'skills', 'folders', 'remove', '.claude/skills'], project).code).toBe(1);
  });

  it('refuses to add what is not a folder, a folder inside the data folder, or one that holds the workspace', () => {
    const project = tempDir('memo-skills-cli-');
    const data = path.join(project, 'data');
    fs.mkdirSync(path.join(data, 'skills'), { recursive: true });
    expect(memo(['--data', data, 'skills', 'folders', 'add', 'nowhere'], project)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('is not a folder'),
    });
    expect(memo(['--data', data, 'skills', 'folders', 'add', 'data/skills'], project)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('inside the data folder'),
    });
    expect(memo(['--data', data, 'skills', 'folders', 'add', '.'], project)).toMatchObject({ code: 2, stderr: expect.stringContaining('holds the workspace') });
    expect(fs.existsSync(path.join(data, 'skill-folders.json'))).toBe(false);
  });

  it('validates an off-spec skill with exit 0, printing each warning with its line', () => {
    const project = tempDir('memo-skills-cli-');
    const r = memo(['skills', 'validate', path.join(FIXTURES, 'long-description')], project);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^warning: SKILL\.md:3:1: description has \d+ characters, over the Agent Skills limit of 1024/);
    expect(r.stdout).toContain('> 3 | description: |-');
    expect(r.stdout).toMatch(/OK skill long-description: 0 command tools \(1 warning\)\n$/);
    const json = JSON.parse(memo(['skills', 'validate', path.join(FIXTURES, 'no-name'), '--json'], project).stdout);
    expect(json).toEqual({
      ok: true,
      problems: [],
      warnings: [{ file: 'SKILL.md', line: 1, field: 'name', message: 'is missing: the folder name "no-name" is used' }],
    });
  });
});
