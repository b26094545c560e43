import * as fs from 'node:fs';
import * as path from 'node:path';
import { readSkill } from '../../../kernel/skills/skill.js';
import { flush, makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { processesWithArg } from '../../helpers/processes.js';
import { waitFor } from '../../helpers/wait.js';

function writeSkill(base: string, name: string, frontmatter: string, body = '# Body\nDo the thing.\n'): string {
  const dir = path.join(base, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'), `---\n${frontmatter}\n---\n${body}`);
  return dir;
}

const echoTool = (extra = '') => `tools:
  - name: echo_arg
    description: Prints its argument in brackets.
    command: "printf '[%s]' {text}"
    parameters:
      type: object
      properties:
        text: { type: string }
      required: [text]
${extra}`;

describe('SKILL.md parsing', () => {
  it.each([
    ['no frontmatter', 'x', null, /must start with YAML frontmatter/],
    ['invalid YAML', 'name: [unclosed\ndescription: d', 'x', /not valid YAML/],
    ['a missing description', 'name: x', 'x', /description is required/],
    ['a name that differs from the folder', 'name: other\ndescription: d', 'x', /must equal its folder name "x"/],
    ['an upper-case name', 'name: Bad\ndescription: d', 'Bad', /name must match pattern/],
    [
      'a safe command tool',
      `name: x\ndescription: d\n${echoTool('    danger: safe')}`,
      'x',
      /tool "echo_arg": danger must be one of medium, dangerous \(got "safe"\)/,
    ],
    [
      'a pipe in a command template',
      `name: x\ndescription: d\ntools:\n  - name: t\n    description: d\n    command: "cat {f} | wc -l"\n    parameters: { type: object, properties: { f: { type: string } }, required: [f] }`,
      'x',
      /"\|" is a shell operator/,
    ],
    [
      'a placeholder for an undeclared parameter',
      `name: x\ndescription: d\ntools:\n  - name: t\n    description: d\n    command: "cat {g}"\n    parameters: { type: object, properties: { f: { type: string } }, required: [f] }`,
      'x',
      /\{g\} is not a declared parameter/,
    ],
    [
      'a placeholder for an optional parameter',
      `name: x\ndescription: d\ntools:\n  - name: t\n    description: d\n    command: "cat {f}"\n    parameters: { type: object, properties: { f: { type: string } } }`,
      'x',
      /\{f\} must be a required parameter/,
    ],
  ])('refuses %s with a clear reason', (_what, fm, name, reason) => {
    const base = tempDir('memo-skill-');
    const dir = path.join(base, name ?? 'x');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'SKILL.md'), name === null ? fm : `---\n${fm}\n---\nbody`);
    expect(() => readSkill(dir)).toThrow(reason);
  });

  it('reads the optional Agent Skills keys and the body', () => {
    const base = tempDir('memo-skill-');
    const dir = writeSkill(
      base,
      'pdf-notes',
      'name: pdf-notes\ndescription: Take notes from PDFs.\nlicense: MIT\ncompatibility: needs poppler\nmetadata:\n  version: "2.0"\nallowed-tools: read_file list_directory',
      '# PDF notes\n',
    );
    const skill = readSkill(dir);
    expect(skill).toMatchObject({
      name: 'pdf-notes',
      license: 'MIT',
      compatibility: 'needs poppler',
      metadata: { version: '2.0' },
      allowedTools: ['read_file', 'list_directory'],
      body: '# PDF notes\n',
      tools: [],
    });
  });
});

describe('skills in the kernel', () => {
  let fx: Fixture;
  let skills: string;
  afterEach(async () => fx?.close());

  async function boot(): Promise<void> {
    fx = makeKernel();
    await fx.kernel.loadSkills([{ dir: skills, source: 'extra' }]);
  }

  beforeEach(() => {
    skills = tempDir('memo-skills-');
  });

  it('shows only names and descriptions up front, and the body and files on demand', async () => {
    writeSkill(skills, 'alpha', 'name: alpha\ndescription: First skill.', '# Alpha\nLong instructions here.\n');
    fs.mkdirSync(path.join(skills, 'alpha', 'templates'));
    fs.writeFileSync(path.join(skills, 'alpha', 'templates', 'note.md'), 'template text');
    await boot();
    const list = await fx.kernel.invoke({ tool: 'list_skills', args: {}, caller: { kind: 'agent' } });
    expect(list.ok && list.value).toEqual({ skills: [{ name: 'alpha', description: 'First skill.', tools: [] }], summary: '1 skill' });
    expect(JSON.stringify(list)).not.toContain('Long instructions');
    const read = await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'alpha' }, caller: { kind: 'agent' } });
    expect(read.ok && read.value).toMatchObject({ instructions: '# Alpha\nLong instructions here.\n', files: ['SKILL.md', 'templates/note.md'] });
    const file = await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'alpha', file: 'templates/note.md' }, caller: { kind: 'agent' } });
    expect(file.ok && (file.value as any).content).toBe('template text');
    const escape = await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'alpha', file: '../alpha/../../etc/passwd' }, caller: { kind: 'agent' } });
    expect(!escape.ok && escape.error.code).toBe('PATH_OUTSIDE_ROOT');
    const missing = await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'nope' }, caller: { kind: 'agent' } });
    expect(!missing.ok && missing.error.code).toBe('NOT_FOUND');
  });

  it("gives a command tool the access modes, keywords, examples and editable its declaration names, as a pack tool's", async () => {
    writeSkill(
      skills,
      'echoer',
      `name: echoer\ndescription: Echoes.\n${echoTool('    modes: [vault]\n    keywords: [bracket]\n    examples: ["wrap hello in brackets"]\n    editable: true')}`,
    );
    await boot();
    const tool = fx.kernel.registry.get('echo_arg');
    expect(tool?.spec).toMatchObject({ modes: ['vault'], keywords: ['bracket'], examples: ['wrap hello in brackets'], editable: true });
    expect(fx.kernel.toolSearch.search('bracket').map((h) => h.name)).toContain('echo_arg');
  });

  it('passes an argument holding shell syntax to the command as one literal argv entry', async () => {
    writeSkill(skills, 'echoer', `name: echoer\ndescription: Echoes.\n${echoTool()}`);
    await boot();
    fx.prompter.setFallback('allow-once');
    for (const text of ['; rm -rf ~', '$(id)', '`id`', 'a b  c', 'it\'s "quoted"', '&& reboot', '\n echo pwned']) {
      const r = await fx.kernel.invoke({ tool: 'echo_arg', args: { text }, caller: { kind: 'agent' } });
      expect(r.ok && (r.value as any).stdout).toBe(`[${text}]`);
    }
  });

  it('refuses a value that starts with "-" where it would be read as an option', async () => {
    writeSkill(skills, 'echoer', `name: echoer\ndescription: Echoes.\n${echoTool()}`);
    await boot();
    fx.prompter.setFallback('allow-once');
    const r = await fx.kernel.invoke({ tool: 'echo_arg', args: { text: '--version' }, caller: { kind: 'agent' } });
    expect(!r.ok && r.error).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('would be read as an option') });
  });

  it('asks before running a command tool (dangerous by default) and runs nothing when denied', async () => {
    const marker = path.join(tempDir(), 'touched');
    writeSkill(
      skills,
      'toucher',
      `name: toucher\ndescription: Touches.\ntools:\n  - name: touch_it\n    description: Creates a file.\n    command: "touch ${marker}"\n    parameters: { type: object }`,
    );
    await boot();
    const tool = fx.kernel.registry.get('touch_it')!;
    expect(tool.spec).toMatchObject({ danger: 'dangerous', effect: 'write', timeoutMs: 60000 });
    fx.prompter.answer('deny-once');
    const r = await fx.kernel.invoke({ tool: 'touch_it', args: {}, caller: { kind: 'agent' } });
    expect(!r.ok && r.error.code).toBe('PERMISSION_DENIED');
    expect(fs.existsSync(marker)).toBe(false);
    expect(fx.prompter.asked[0]?.preview).toMatchObject({ kind: 'command', quoted: [{ label: 'command', text: `touch ${marker}` }] });
  });

  it('refuses a command the blacklist blocks, even when the tool is allowed forever', async () => {
    writeSkill(
      skills,
      'rooter',
      `name: rooter\ndescription: Escalates.\ntools:\n  - name: as_root\n    description: Runs id as root.\n    command: "sudo id"\n    parameters: { type: object }`,
    );
    await boot();
    fx.kernel.permissions.set({ tool: 'as_root', decision: 'allow', plugin: 'skill-rooter', scope: 'forever' }, new Date());
    const r = await fx.kernel.invoke({ tool: 'as_root', args: {}, caller: { kind: 'agent' } });
    expect(!r.ok && r.error).toMatchObject({ code: 'COMMAND_BLOCKED', message: expect.stringContaining('rule sudo') });
  });

  it('runs from the skill folder when it says so, and from the sandbox root by default', async () => {
    writeSkill(
      skills,
      'where',
      `name: where\ndescription: Prints the working directory.\ntools:\n  - name: pwd_skill\n    description: pwd in the skill folder.\n    command: pwd\n    cwd: skill\n    parameters: { type: object }\n  - name: pwd_root\n    description: pwd in the root.\n    command: pwd\n    parameters: { type: object }`,
    );
    await boot();
    fx.prompter.setFallback('allow-once');
    const a = await fx.kernel.invoke({ tool: 'pwd_skill', args: {}, caller: { kind: 'agent' } });
    const b = await fx.kernel.invoke({ tool: 'pwd_root', args: {}, caller: { kind: 'agent' } });
    expect(a.ok && (a.value as any).stdout.trim()).toBe(fs.realpathSync(path.join(skills, 'where')));
    expect(b.ok && (b.value as any).stdout.trim()).toBe(fx.kernel.config.root);
  });

  it('resolves declared path parameters through the sandbox', async () => {
    writeSkill(
      skills,
      'catter',
      `name: catter\ndescription: Cats.\ntools:\n  - name: cat_file\n    description: Prints a file.\n    command: "cat -- {file}"\n    paths: [file]\n    parameters: { type: object, properties: { file: { type: string } }, required: [file] }`,
    );
    await boot();
    fx.prompter.setFallback('allow-once');
    fs.writeFileSync(path.join(fx.root, 'a.txt'), 'inside');
    const ok = await fx.kernel.invoke({ tool: 'cat_file', args: { file: 'a.txt' }, caller: { kind: 'agent' } });
    expect(ok.ok && (ok.value as any).stdout).toBe('inside');
    const out = await fx.kernel.invoke({ tool: 'cat_file', args: { file: '/etc/hostname' }, caller: { kind: 'agent' } });
    expect(!out.ok && out.error.code).toBe('PATH_OUTSIDE_ROOT');
  });

  it('kills the command when the tool times out', async () => {
    const marker = path.join(tempDir(), 'late');
    writeSkill(
      skills,
      'sleeper',
      `name: sleeper\ndescription: Sleeps.\ntools:\n  - name: nap\n    description: Sleeps then writes a marker.\n    command: "sh -c 'sleep 2; touch ${marker}'"\n    timeoutMs: 1000\n    parameters: { type: object }`,
    );
    await boot();
    fx.prompter.setFallback('allow-once');
    const pending = fx.kernel.invoke({ tool: 'nap', args: {}, caller: { kind: 'agent' } });
    await waitFor(() => processesWithArg(marker).length > 0, { what: 'the command to start' });
    await flush();
    fx.clock.advance(1000);
    const r = await pending;
    expect(!r.ok && r.error.code).toBe('TIMEOUT');
    // Once no process of the command is left, nothing can write the marker any more.
    await waitFor(() => processesWithArg(marker).length === 0, { what: () => `the command's processes to end (left: ${processesWithArg(marker).join(', ')})` });
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('skips a skill whose tool name is already taken, and one whose frontmatter is broken, loading the rest', async () => {
    writeSkill(
      skills,
      'clash',
      `name: clash\ndescription: Clashes.\ntools:\n  - name: echo_safe\n    description: Same name as a pack tool.\n    command: "true"\n    parameters: { type: object }`,
    );
    writeSkill(skills, 'broken', 'name: broken\ndescription: [');
    writeSkill(skills, 'fine', 'name: fine\ndescription: Fine.');
    await boot();
    const states = Object.fromEntries(fx.kernel.skills.list().map((s) => [s.name, s]));
    expect(states.clash).toMatchObject({ status: 'failed', error: expect.stringContaining('already provided by pack "echo-pack"') });
    expect(states.broken).toMatchObject({ status: 'failed', error: expect.stringContaining('not valid YAML') });
    expect(states.fine?.status).toBe('loaded');
  });
});
