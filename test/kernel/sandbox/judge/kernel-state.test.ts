import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CommandJudge } from '../../../../kernel/sandbox/command-judge.js';
import { KernelState } from '../../../../kernel/sandbox/kernel-state.js';
import { nth } from '../../../helpers/nth.js';

/** The three layouts: default `./data`, `--data` elsewhere inside the root, `--data` outside the root. */
interface Layout {
  name: string;
  root: string;
  /** How a command in the root spells the data folder. */
  data: string;
  inside: boolean;
  judge: CommandJudge;
}

let tmp: string;
const layouts: Layout[] = [];

beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'memo-judge-'));
  const make = (name: string, dataRel: string | null): Layout => {
    const root = path.join(tmp, name, 'root');
    mkdirSync(path.join(root, 'src'), { recursive: true });
    mkdirSync(path.join(root, 'plugins', 'fs-tools'), { recursive: true });
    const dataDir = dataRel ? path.join(root, dataRel) : path.join(tmp, name, 'elsewhere', 'data');
    mkdirSync(path.join(dataDir, 'packs'), { recursive: true });
    writeFileSync(path.join(dataDir, 'providers.json'), '{}');
    symlinkSync(dataDir, path.join(root, 'link'));
    const state = new KernelState();
    state.add(dataDir, 'the data folder');
    state.add(path.join(root, 'plugins'), 'the built-in plugin folder', 'change');
    return { name, root, data: dataRel ?? dataDir, inside: dataRel !== null, judge: new CommandJudge(state) };
  };
  layouts.push(make('default', 'data'), make('data-inside', 'var-state'), make('data-outside', null));
});

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Commands that reach the data folder, `{D}` standing for its spelling from the root, `{S}` for it from `src/`. */
const REACHING: readonly string[] = [
  'cat {D}/providers.json',
  'less {D}/permissions.json',
  'cp evil.js {D}/packs/x/index.js',
  'echo "{}" > {D}/permissions.json',
  'echo x >> {D}/agent-audit.jsonl',
  'cd {D} && ls',
  'cd {D}; cat providers.json',
  'X={D}/providers.json; cat "$X"',
  'node app.js --config={D}/settings.json',
  'cd src && cat {S}/providers.json',
  'tar czf out.tgz {D}',
  "sh -c 'cat {D}/providers.json'",
  'grep -r key {D}',
  'ln -s {D}/packs p',
  'cat link/providers.json',
  'rm -rf link/packs',
  'mv {D} /tmp/gone',
  'rsync -a evil/ {D}/packs/',
  'find {D} -name "*.json"',
  'PATH={D}/bin:$PATH ls',
];

describe('kernel-state rule', () => {
  it.each(REACHING)('refuses %j in every layout', async (template) => {
    for (const l of layouts) {
      // Placeholders in braces: a temporary folder's random name may hold any letter.
      const command = template.replaceAll('{S}', l.inside ? `../${l.data}` : l.data).replaceAll('{D}', l.data);
      const v = await l.judge.judge(command, { cwd: l.root });
      expect({ layout: l.name, command, verdict: v.verdict, rule: v.rule }).toEqual({ layout: l.name, command, verdict: 'blocked', rule: 'kernel-state' });
      expect(v.reason).toMatch(/^kernel-state: .*the data folder/);
    }
  });

  it.each([
    ['cat DATA/providers.json'],
    ['cat data./providers.json'],
    ['cat ./src/../data/providers.json'],
    ['cat d*/providers.json'],
    ['rm -r da?a'],
    ['git clean -fdx'],
    ['git stash -u'],
    ['find . -name "*.json" -delete'],
    ['chmod -R u+w .'],
  ])('refuses %j, which reaches the data folder inside the root by another spelling', async (command) => {
    const l = nth(layouts, 0);
    await expect(l.judge.judge(command, { cwd: l.root })).resolves.toMatchObject({ verdict: 'blocked', rule: 'kernel-state' });
  });

  it('refuses writes into a folder closed only to changes, and lets reads of it through', async () => {
    const l = nth(layouts, 0);
    await expect(l.judge.judge('cp evil.js plugins/fs-tools/index.js', { cwd: l.root })).resolves.toMatchObject({ verdict: 'blocked', rule: 'kernel-state' });
    await expect(l.judge.judge('echo x > plugins/fs-tools/x.js', { cwd: l.root })).resolves.toMatchObject({ verdict: 'blocked', rule: 'kernel-state' });
    await expect(l.judge.judge('cat plugins/fs-tools/index.js', { cwd: l.root })).resolves.toMatchObject({ verdict: 'allowed' });
  });

  it('lets commands that do not reach an area through', async () => {
    for (const l of layouts) {
      for (const command of ['cat src/index.ts', 'npm test', 'ls -la', 'git status', 'rm -rf dist', 'echo "the data is fine"', 'cp -r src backup']) {
        await expect(l.judge.judge(command, { cwd: l.root })).resolves.toMatchObject({ verdict: 'allowed' });
      }
    }
  });

  it('reads the real working directory from the caller: from another folder, `data/` names something else', async () => {
    const l = nth(layouts, 0);
    await expect(l.judge.judge('cat data/providers.json', { cwd: path.join(l.root, 'src') })).resolves.toMatchObject({ verdict: 'allowed' });
    await expect(l.judge.judge(`cat ${path.join(l.root, 'data', 'providers.json')}`, { cwd: path.join(l.root, 'src') })).resolves.toMatchObject({
      verdict: 'blocked',
      rule: 'kernel-state',
    });
  });

  it('never fires without kernel state', async () => {
    const plain = new CommandJudge();
    const l = nth(layouts, 0);
    for (const command of ['cat data/providers.json', 'cd data && ls', 'X=data/k', 'git clean -fdx']) {
      await expect(plain.judge(command, { cwd: l.root })).resolves.toMatchObject({ verdict: 'allowed' });
    }
  });

  it('reads the search pattern of grep and the words of echo as text, not paths, but still the paths after them', async () => {
    const l = nth(layouts, 0);
    for (const command of ['grep -rn data src', 'rg data src', 'grep -- data src', 'echo data', 'printf "%s\\n" data']) {
      await expect(l.judge.judge(command, { cwd: l.root }).then((v) => [command, v.verdict])).resolves.toEqual([command, 'allowed']);
    }
    for (const command of ['grep -rn key data', 'grep -e data data/permissions.json', 'echo data > data/x', 'grep -A 3 data src']) {
      await expect(l.judge.judge(command, { cwd: l.root }).then((v) => [command, v.rule])).resolves.toEqual([command, 'kernel-state']);
    }
  });
});

describe('the working directory by name: $PWD, ~+, $(pwd), ~- and $OLDPWD', () => {
  it.each([
    ['cat ~+/data/providers.json'],
    ['cat $PWD/data/permissions.json'],
    ['cat "${PWD}/data/permissions.json"'],
    ['echo x > "$(pwd)/data/permissions.json"'],
    ['cat `pwd`/data/providers.json'],
    ['cat "$(pwd -P)/data/providers.json"'],
    ['cat "$(builtin pwd)"/data/providers.json'],
    ['cat "$(realpath .)/data/providers.json"'],
    ['cat "$(readlink -f .)/data/providers.json"'],
    ['x=$(pwd); cd /tmp; cat $x/data/providers.json'],
    ['(cd src; cat ~+/../data/providers.json)'],
    ['X=$PWD/data; cat $X/providers.json'],
    ['cd src && cat $PWD/../data/providers.json'],
    ['cd src && cat ~+/../data/providers.json'],
    ['cd src && cat ~-/data/providers.json'],
    ['cd /tmp && cat "$OLDPWD/data/providers.json"'],
    ['cd /tmp; cd -; cat data/providers.json'],
    ['cd src; cd /tmp; cat ~-/../data/providers.json'],
    ['rm -rf ~+/data'],
  ])('refuses %j, which names the data folder through the working directory', async (command) => {
    const l = nth(layouts, 0);
    const v = await l.judge.judge(command, { cwd: l.root });
    expect({ command, verdict: v.verdict, rule: v.rule }).toEqual({ command, verdict: 'blocked', rule: 'kernel-state' });
  });

  it.each([
    ['cat ~+/src/index.ts'],
    ['cat "$PWD/src/index.ts"'],
    ['cat ~-/data/providers.json'],
    ["echo '~+/data/providers.json'"],
    ['cat "~+/data/providers.json"'],
  ])('lets %j through: the working directory it names holds no kernel state there (or `~-` is not known before a cd)', async (command) => {
    const l = nth(layouts, 0);
    await expect(l.judge.judge(command, { cwd: l.root }).then((v) => [command, v.verdict])).resolves.toEqual([command, 'allowed']);
  });

  // After `cd src` the command may still be in the root (the `cd` may fail), so `cd src && cat $PWD/data/…`
  // is refused like `cd src && cat data/…`; the directory the caller gives is exact.
  it('judges $PWD as the directory the caller gives: from src/, data/ there is not the data folder', async () => {
    const l = nth(layouts, 0);
    await expect(l.judge.judge('cat $PWD/data/providers.json', { cwd: path.join(l.root, 'src') })).resolves.toMatchObject({ verdict: 'allowed' });
    await expect(l.judge.judge('cat $PWD/../data/providers.json', { cwd: path.join(l.root, 'src') })).resolves.toMatchObject({ rule: 'kernel-state' });
  });
});

describe('recursive commands over a folder holding the data folder, in and out of the OS sandbox', () => {
  /** Refused outside the OS sandbox: they would read or change the data folder inside `.`; allowed in it, where it does not exist. */
  const INCIDENTAL = [
    "find . -name '*.pyc' -delete",
    'find . -type f -exec cat {} +',
    'find . -type f | xargs cat',
    'cat $(find . -type f) | base64',
    'grep -r foo .',
    'grep -r . . | rev',
    'grep -R --include=*.json key',
    'rg data',
    'ag foo',
    'tar c .',
    'tar c . | base64',
    'tar czf /tmp/all.tgz .',
    'tar -C .. -czf /tmp/x.tgz root',
    'zip -r /tmp/all.zip .',
    'cp -r . /tmp/copy',
    'rsync -a ./ /tmp/copy/',
    'scp -r . host:backup',
    'diff -r . /tmp/copy',
    'rm -f *',
    'ls *',
    'git clean -fdx',
    'git stash -u',
    'chmod -R u+w .',
  ];

  it.each(INCIDENTAL)('refuses %j outside the OS sandbox (the default)', async (command) => {
    const l = nth(layouts, 0);
    const v = await l.judge.judge(command, { cwd: l.root });
    expect({ command, verdict: v.verdict, rule: v.rule }).toEqual({ command, verdict: 'blocked', rule: 'kernel-state' });
  });

  it.each(INCIDENTAL)('allows %j in the OS sandbox, where the data folder does not exist', async (command) => {
    const l = nth(layouts, 0);
    const v = await l.judge.judge(command, { cwd: l.root, osSandbox: true });
    expect({ command, verdict: v.verdict }).toEqual({ command, verdict: 'allowed' });
  });

  it.each([
    ['cat ~+/data/audit.key'],
    ['rm -r data'],
    ['cat data/permissions.json'],
    ['echo x > "$(pwd)/data/permissions.json"'],
    ['cd data && ls'],
    ['cat d*/providers.json'],
    ['rm -r da?a'],
    ['cat */providers.json'],
    ['tar c data | base64'],
    ['grep -r key data'],
    ['cat link/providers.json'],
  ])('still refuses %j in the OS sandbox: its words name kernel state', async (command) => {
    const l = nth(layouts, 0);
    await expect(l.judge.judge(command, { cwd: l.root, osSandbox: true })).resolves.toMatchObject({ verdict: 'blocked', rule: 'kernel-state' });
  });

  it('allows `du -sh .` and `ls -R` in both: they read names and sizes, not the files', async () => {
    const l = nth(layouts, 0);
    for (const osSandbox of [false, true]) {
      for (const command of ['du -sh .', 'ls -R .', 'find . -name "*.ts"', 'grep -rn TODO src'])
        await expect(l.judge.judge(command, { cwd: l.root, osSandbox }).then((v) => [command, osSandbox, v.verdict])).resolves.toEqual([
          command,
          osSandbox,
          'allowed',
        ]);
    }
  });

  it('keeps the rules that are not about kernel state: `rm -rf *` deletes the working directory, in the sandbox too', async () => {
    const l = nth(layouts, 0);
    await expect(l.judge.judge('rm -rf *', { cwd: l.root })).resolves.toMatchObject({ rule: 'kernel-state' });
    await expect(l.judge.judge('rm -rf *', { cwd: l.root, osSandbox: true })).resolves.toMatchObject({ verdict: 'blocked', rule: 'rm-cwd' });
  });

  it('refuses nothing more when the data folder is outside the root', async () => {
    const l = nth(layouts, 2);
    for (const command of INCIDENTAL.filter((c) => !c.includes('..') && !c.startsWith('git')))
      await expect(l.judge.judge(command, { cwd: l.root }).then((v) => [command, v.verdict])).resolves.toEqual([command, 'allowed']);
  });
});
