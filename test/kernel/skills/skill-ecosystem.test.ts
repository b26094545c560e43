import * as fs from 'node:fs';
import * as path from 'node:path';
import { runTurn } from '../../../kernel/agent/agent-loop.js';
import { loadParser } from '../../../kernel/sandbox/judge/parser.js';
import { commandOutside, mapAllowedTools, splitAllowedTools, type CommandPattern } from '../../../kernel/skills/allowed-tools.js';
import { readSkill } from '../../../kernel/skills/skill.js';
import { ACTIVE_TURNS_CAP } from '../../../kernel/skills/skill-manager.js';
import { INDEX_DESCRIPTION_CHARS, skillIndex } from '../../../kernel/skills/skill-index.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';

/** Skills written for these tests (never copies of public ones). */
const FIXTURES = path.resolve('test/fixtures/skills-ecosystem');

/** A fresh copy of some fixture skills in a temp skills folder (loading protects it, tests change it). */
function skillsWith(...names: string[]): string {
  const dir = tempDir('memo-eco-skills-');
  for (const n of names) fs.cpSync(path.join(FIXTURES, n), path.join(dir, n), { recursive: true });
  return dir;
}

function writeSkill(base: string, name: string, frontmatter: string, body = '# Body\n'): string {
  const dir = path.join(base, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'), `---\n${frontmatter}\n---\n${body}`);
  return dir;
}

const code = (r: ToolResult) => (r.ok ? 'ok' : r.error.code);
const message = (r: ToolResult) => (r.ok ? '' : r.error.message);

describe('lenient loading of skills from the wider ecosystem', () => {
  it('loads an over-long description with a warning at its line, cut in list_skills and whole in read_skill', async () => {
    const skill = readSkill(path.join(FIXTURES, 'long-description'));
    expect(skill.description.length).toBeGreaterThan(1024);
    expect(skill.warnings).toEqual([
      { file: 'SKILL.md', line: 3, column: 1, field: 'description', message: expect.stringContaining(`has ${skill.description.length} characters, over`) },
    ]);
    const fx = makeKernel();
    await fx.kernel.loadSkills([{ dir: skillsWith('long-description'), source: 'extra' }]);
    const list = await fx.kernel.invoke({ tool: 'list_skills', args: {}, caller: { kind: 'agent' } });
    const listed = (list.ok && (list.value as { skills: Array<{ description: string }> }).skills[0]!.description) || '';
    expect(listed.length).toBeLessThanOrEqual(1024);
    expect(listed).toMatch(/…$/);
    expect(listed).not.toContain('\n');
    const read = await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'long-description' }, caller: { kind: 'agent' } });
    expect(read.ok && (read.value as { description: string }).description).toBe(skill.description);
    expect(fx.kernel.skills.get('long-description')).toMatchObject({ status: 'loaded', warnings: [expect.objectContaining({ field: 'description' })] });
    expect(fx.logger.lines.some((l) => l.level === 'warn' && /skill long-description: SKILL\.md:3:1: description has \d+ characters/.test(l.message))).toBe(
      true,
    );
    await fx.close();
  });

  it('keeps unknown front-matter keys, shows them in read_skill and warns with each key line', async () => {
    const skill = readSkill(path.join(FIXTURES, 'extra-keys'));
    expect(skill.otherKeys).toEqual({ model: 'a-model-name', 'argument-hint': '[version]', 'user-invocable': true, hooks: { before: 'check-version' } });
    expect(skill.warnings.map((w) => [w.field, w.line])).toEqual([
      ['model', 4],
      ['argument-hint', 5],
      ['user-invocable', 6],
      ['hooks', 7],
    ]);
    const fx = makeKernel();
    await fx.kernel.loadSkills([{ dir: skillsWith('extra-keys'), source: 'extra' }]);
    const read = await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'extra-keys' }, caller: { kind: 'agent' } });
    expect(read.ok && read.value).toMatchObject({ otherKeys: skill.otherKeys, instructions: expect.stringContaining('Group the changes') });
    await fx.close();
  });

  it('takes a missing name from the folder, with a warning', () => {
    const skill = readSkill(path.join(FIXTURES, 'no-name'));
    expect(skill.name).toBe('no-name');
    expect(skill.warnings).toEqual([expect.objectContaining({ field: 'name', message: 'is missing: the folder name "no-name" is used' })]);
  });

  it.each([
    ['a name that differs from its folder', 'Mismatch', 'name: other\ndescription: d', /must equal its folder name/],
    ['a missing name whose folder is no skill name', 'Not A Name', 'description: d', /folder name "Not A Name" cannot stand in/],
    [
      'a script outside the skill folder',
      'escaper',
      'description: d\ntools:\n  - name: esc\n    description: d\n    script: ../outside.py\n    command: "python3 {script}"\n    parameters: { type: object }',
      /tool esc: "\.\.\/outside\.py" leads outside the skill folder/,
    ],
    [
      'a script the command never names',
      'unnamed',
      'description: d\ntools:\n  - name: un\n    description: d\n    script: SKILL.md\n    command: "python3 x.py"\n    parameters: { type: object }',
      /names no \{script\}/,
    ],
    [
      'a {script} placeholder without a script',
      'noscript',
      'description: d\ntools:\n  - name: ns\n    description: d\n    command: "python3 {script}"\n    parameters: { type: object }',
      /\{script\} is not a declared parameter/,
    ],
  ])('still refuses %s', (_what, folder, fm, reason) => {
    const base = tempDir('memo-eco-');
    fs.writeFileSync(path.join(base, 'outside.py'), 'print(1)\n');
    const dir = writeSkill(base, folder, fm);
    expect(() => readSkill(dir)).toThrow(reason);
  });

  it('refuses a bundled script that is a link pointing out of the skill folder', () => {
    const base = tempDir('memo-eco-');
    fs.writeFileSync(path.join(base, 'outside.py'), 'print(1)\n');
    const dir = writeSkill(
      base,
      'linker',
      'description: d\ntools:\n  - name: lk\n    description: d\n    script: scripts/run.py\n    command: "python3 {script}"\n    parameters: { type: object }',
    );
    fs.mkdirSync(path.join(dir, 'scripts'));
    fs.symlinkSync(path.join(base, 'outside.py'), path.join(dir, 'scripts', 'run.py'));
    expect(() => readSkill(dir)).toThrow(/"scripts\/run\.py" leads outside the skill folder/);
  });
});

describe('allowed-tools, mapped', () => {
  it('splits on spaces and commas, never inside parentheses', () => {
    expect(splitAllowedTools('Read, Grep Bash(git diff:*)')).toEqual(['Read', 'Grep', 'Bash(git diff:*)']);
    expect(splitAllowedTools(['Read', 'Bash(npm run test *)'])).toEqual(['Read', 'Bash(npm run test *)']);
  });

  it('maps the public names to this project tools and Bash patterns to command prefixes', () => {
    const a = mapAllowedTools(splitAllowedTools('Read Write Edit Grep Glob WebSearch Bash(git:*) Bash(git status) mcp__memo__vault_search_notes'));
    expect([...a.tools].sort()).toEqual(
      [
        'delete_lines',
        'edit_file',
        'get_file_info',
        'insert_line',
        'list_directory',
        'read_file',
        'search_files',
        'vault_search_notes',
        'web_search',
        'write_file',
      ].sort(),
    );
    expect(a.commands).toEqual([
      { words: ['git'], exact: false, written: 'Bash(git:*)' },
      { words: ['git', 'status'], exact: true, written: 'Bash(git status)' },
    ]);
    expect(a.warnings).toEqual([]);
    expect(mapAllowedTools(['Bash']).commands).toBe('any');
  });

  it('warns about what grants nothing: unknown names, no counterpart, path patterns, wildcards inside words', () => {
    const a = mapAllowedTools(['Frobnicate', 'WebFetch', 'Read(./docs/**)', 'Bash(git*)', 'no_such_tool'], (t) => t !== 'no_such_tool');
    expect(a.tools.size).toBe(1); // no_such_tool: kept (a pack may bring it later), and warned about
    expect(a.commands).toEqual([]);
    expect(a.warnings).toEqual([
      expect.stringContaining('"Frobnicate" is not a tool known here'),
      expect.stringContaining('"WebFetch" has no counterpart'),
      expect.stringContaining('"Read(./docs/**)": path patterns are not enforced'),
      expect.stringContaining('Bash(git*): only "prefix:*"'),
      expect.stringContaining('names the tool "no_such_tool", which no loaded pack provides'),
    ]);
  });

  it('checks Bash patterns on the parsed command, failing closed', async () => {
    const parser = await loadParser();
    const patterns: CommandPattern[] = [
      { words: ['git', 'log'], exact: false, written: 'Bash(git log:*)' },
      { words: ['git', 'status'], exact: true, written: 'Bash(git status)' },
    ];
    for (const ok of ['git log --oneline -5', "'git' log", 'git log -1 && git status', 'git log | git status', 'git status # comment'])
      expect([ok, commandOutside(parser, ok, patterns)]).toEqual([ok, null]);
    for (const refused of [
      'git status --short', // exact pattern
      'git push',
      'gitlog',
      '/usr/bin/git log', // the name as written, never a basename
      'git log; rm -rf x',
      'git log $(rm -rf x)',
      'git log `id`',
      'git log > out.txt',
      'X=1 git log',
      'git log "$HOME"',
      '(git log)',
      'if true; then git log; fi',
      'git log &&',
      '',
    ])
      expect([refused, commandOutside(parser, refused, patterns)]).toEqual([refused, expect.any(String)]);
  });
});

describe('allowed-tools enforced for the turn that read the skill', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  async function boot(skills: string): Promise<void> {
    fx = makeKernel();
    await fx.kernel.loadPacks(['shell']);
    await fx.kernel.loadSkills([{ dir: skills, source: 'extra' }]);
  }
  const turn = (provider: ScriptedProvider) =>
    runTurn(fx.kernel, { provider, model: 'test-model', conversationId: 'conv-1', history: [], userMessage: 'what changed?' });

  it('refuses a call outside the list naming the skill, and lets a call inside go on to the gate, which still asks', async () => {
    await boot(skillsWith('git-only'));
    fx.prompter.answer('allow-once');
    const provider = new ScriptedProvider((_r, n) =>
      n === 1
        ? reply('', toolCall('read_skill', { name: 'git-only' }))
        : n === 2
          ? reply('', toolCall('echo_medium', { text: 'outside' }))
          : n === 3
            ? reply('', toolCall('run_command', { command: 'rm -rf build' }))
            : n === 4
              ? reply('', toolCall('run_command', { command: 'git log -1' }))
              : reply('done'),
    );
    const r = await turn(provider);
    expect(r.steps.map((s) => [s.tool, s.outcome, s.code])).toEqual([
      ['read_skill', 'ok', undefined],
      ['echo_medium', 'denied', 'PERMISSION_DENIED'],
      ['run_command', 'denied', 'PERMISSION_DENIED'],
      ['run_command', 'ok', undefined],
    ]);
    // The model is told which skill refused and why.
    const toolMessages = r.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
    expect(toolMessages[1]).toContain('this turn follows the skill "git-only"');
    expect(toolMessages[1]).toContain('do not include echo_medium');
    expect(toolMessages[2]).toContain('"rm -rf build" matches none of Bash(git log:*), Bash(git status)');
    // Only the call inside the list reached the gate, which asked as it always does.
    expect(fx.prompter.asked.map((q) => q.tool)).toEqual(['run_command']);
    const audit = fx.kernel.audit.tail().filter((e) => e.tool === 'echo_medium' || e.tool === 'run_command');
    expect(audit.map((e) => [e.tool, e.decision])).toEqual([
      ['echo_medium', 'deny:skill'],
      ['run_command', 'deny:skill'],
      ['run_command', expect.not.stringMatching(/skill/)],
    ]);
  });

  it('ends with the turn: the next turn, and a turn that never read the skill, are not restricted', async () => {
    await boot(skillsWith('git-only'));
    const first = new ScriptedProvider((_r, n) => (n === 1 ? reply('', toolCall('read_skill', { name: 'git-only' })) : reply('read')));
    const ended: string[] = [];
    const endTurn = fx.kernel.skills.endTurn.bind(fx.kernel.skills);
    fx.kernel.skills.endTurn = (t: string) => {
      ended.push(t);
      endTurn(t);
    };
    await turn(first);
    // The loop ended the turn it ran: the turn's skills are forgotten, not left to age out.
    expect(ended).toHaveLength(1);
    expect(fx.kernel.skills.activeSkills(ended[0]!)).toEqual([]);
    fx.prompter.answer('allow-once');
    const second = new ScriptedProvider((_r, n) => (n === 1 ? reply('', toolCall('echo_medium', { text: 'later' })) : reply('done')));
    const r = await turn(second);
    expect(r.steps.map((s) => [s.tool, s.outcome])).toEqual([['echo_medium', 'ok']]);
    expect(fx.prompter.asked.map((q) => q.tool)).toEqual(['echo_medium']);
  });

  it('holds a turn that read two skills to both of them (each only takes tools away)', async () => {
    const skills = tempDir('memo-eco-skills-');
    writeSkill(skills, 'wide', 'name: wide\ndescription: Wide.\nallowed-tools: echo_safe echo_medium');
    writeSkill(skills, 'narrow', 'name: narrow\ndescription: Narrow.\nallowed-tools: [echo_safe]');
    writeSkill(skills, 'free', 'name: free\ndescription: No list.');
    await boot(skills);
    const call = (tool: string, turnId: string) => fx.kernel.invoke({ tool, args: {}, caller: { kind: 'agent', turn: turnId } });
    await call('read_skill', 't1').then(() => fx.kernel.invoke({ tool: 'read_skill', args: { name: 'wide' }, caller: { kind: 'agent', turn: 't1' } }));
    fx.prompter.setFallback('allow-once');
    expect(code(await call('echo_medium', 't1'))).toBe('ok');
    await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'narrow' }, caller: { kind: 'agent', turn: 't1' } });
    await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'free' }, caller: { kind: 'agent', turn: 't1' } });
    expect(fx.kernel.skills.activeSkills('t1')).toEqual(['wide', 'narrow']);
    const refused = await call('echo_medium', 't1');
    expect(code(refused)).toBe('PERMISSION_DENIED');
    expect(message(refused)).toContain('the skill "narrow"');
    expect(code(await call('echo_safe', 't1'))).toBe('ok');
    // Reading SKILL.md (or any file of the skill) as a file activates it as well: no way around it.
    await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'narrow', file: 'SKILL.md' }, caller: { kind: 'agent', turn: 't2' } });
    expect(fx.kernel.skills.activeSkills('t2')).toEqual(['narrow']);
    expect(code(await call('echo_medium', 't2'))).toBe('PERMISSION_DENIED');
  });

  it('refuses a new activation past ACTIVE_TURNS_CAP running turns instead of forgetting one, and forgets a turn when it ends', async () => {
    const skills = tempDir('memo-eco-skills-');
    writeSkill(skills, 'narrow', 'name: narrow\ndescription: Narrow.\nallowed-tools: echo_safe');
    await boot(skills);
    const read = (t: string) => fx.kernel.invoke({ tool: 'read_skill', args: { name: 'narrow' }, caller: { kind: 'agent', turn: t } });
    for (let i = 0; i < ACTIVE_TURNS_CAP; i++) expect(code(await read(`t${i}`))).toBe('ok');
    // Full: the first turn is still restricted, and a new turn cannot read the skill.
    expect(code(await read('one-more'))).toBe('RATE_LIMITED');
    expect(fx.kernel.skills.activeSkills('one-more')).toEqual([]);
    expect(code(await fx.kernel.invoke({ tool: 'echo_medium', args: {}, caller: { kind: 'agent', turn: 't0' } }))).toBe('PERMISSION_DENIED');
    // A turn that already follows the skill may read it again.
    expect(code(await read('t0'))).toBe('ok');
    // One turn ends: its restriction is gone, and there is room for another.
    fx.kernel.skills.endTurn('t1');
    expect(fx.kernel.skills.activeSkills('t1')).toEqual([]);
    expect(code(await read('one-more'))).toBe('ok');
  });
});

describe('allowed-tools for an agent CLI calling back over MCP with its turn capability', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('holds an MCP caller presenting a turn capability to the skills the turn read, and lets go when the capability is destroyed', async () => {
    const skills = tempDir('memo-eco-skills-');
    writeSkill(skills, 'narrow', 'name: narrow\ndescription: Narrow.\nallowed-tools: echo_safe');
    fx = makeKernel();
    await fx.kernel.loadSkills([{ dir: skills, source: 'extra' }]);
    fx.prompter.setFallback('allow-once');
    const conversation = (await fx.kernel.conversations.create()).id;
    const capability = await fx.kernel.capabilities.mint(conversation);
    const mcp = () => ({ kind: 'mcp' as const, id: 'claude-cli', capability });

    // Before the skill is read, the CLI's write goes to the gate (and is allowed here).
    expect(code(await fx.kernel.invoke({ tool: 'echo_medium', args: {}, caller: mcp() }))).toBe('ok');
    // The CLI reads the skill over MCP: its turn now follows it.
    expect(code(await fx.kernel.invoke({ tool: 'read_skill', args: { name: 'narrow' }, caller: mcp() }))).toBe('ok');
    const turn = fx.kernel.capabilities.turnOf(capability)!;
    expect(fx.kernel.skills.activeSkills(turn)).toEqual(['narrow']);
    const refused = await fx.kernel.invoke({ tool: 'echo_medium', args: {}, caller: mcp() });
    expect(code(refused)).toBe('PERMISSION_DENIED');
    expect(message(refused)).toContain('the skill "narrow"');
    expect(code(await fx.kernel.invoke({ tool: 'echo_safe', args: {}, caller: mcp() }))).toBe('ok');
    // Another MCP client (no capability, or a made-up one) is not that turn.
    expect(code(await fx.kernel.invoke({ tool: 'echo_safe', args: {}, caller: { kind: 'mcp', capability: 'memo-cap-made-up' } }))).toBe('ok');
    // The turn ends (its capability destroyed): the skill no longer restricts anything of it.
    fx.kernel.capabilities.revoke(capability);
    expect(fx.kernel.skills.activeSkills(turn)).toEqual([]);
    expect(fx.kernel.capabilities.turnOf(capability)).toBeUndefined();
  });

  it("gives the agent loop's own calls and the capability it mints one turn", async () => {
    const skills = tempDir('memo-eco-skills-');
    writeSkill(skills, 'narrow', 'name: narrow\ndescription: Narrow.\nallowed-tools: echo_safe');
    fx = makeKernel();
    await fx.kernel.loadSkills([{ dir: skills, source: 'extra' }]);
    const conversation = (await fx.kernel.conversations.create()).id;
    let during: string | undefined;
    const provider = new ScriptedProvider(async (_r, n) => {
      if (n === 2) {
        // What the turn spawned (a CLI) calls back with the turn's capability after the loop read the skill.
        const r = await fx.kernel.invoke({ tool: 'echo_medium', args: {}, caller: { kind: 'mcp', capability: during! } });
        expect(message(r)).toContain('the skill "narrow"');
        return reply('done');
      }
      return reply('', toolCall('read_skill', { name: 'narrow' }));
    });
    const r = await runTurn(fx.kernel, {
      provider,
      model: 'm',
      conversationId: conversation,
      history: [],
      userMessage: 'go',
      onEvent: (e) => {
        if (e.type === 'turn_start' && e.capability) during = e.capability;
      },
    });
    expect(r.stopReason).toBe('final');
    expect(provider.requests).toHaveLength(2);
    expect(during).toBeDefined();
  });
});

describe('a bundled script, run as the skill command tool it declares', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  async function boot(): Promise<string> {
    const skills = skillsWith('word-count');
    fx = makeKernel();
    await fx.kernel.loadPacks(['shell']);
    await fx.kernel.loadSkills([{ dir: skills, source: 'extra' }]);
    fs.writeFileSync(path.join(fx.root, 'notes.txt'), 'one two three four\n');
    return path.join(skills, 'word-count');
  }

  it('runs the script as a real python3 process from the sandbox root, after the judge and the gate, and audits it', async () => {
    const dir = await boot();
    fx.prompter.answer('allow-once');
    const r = await fx.kernel.invoke({ tool: 'count_words', args: { file: 'notes.txt' }, caller: { kind: 'agent' } });
    expect(r.ok && JSON.parse((r.value as { stdout: string }).stdout)).toEqual({ words: 4, cwd: fx.kernel.config.root });
    const script = fs.realpathSync(path.join(dir, 'scripts', 'count_words.py'));
    expect(r.ok && (r.value as { command: string }).command).toBe(`python3 ${script} ${path.join(fx.kernel.config.root, 'notes.txt')}`);
    expect(fx.prompter.asked).toHaveLength(1);
    expect(fx.prompter.asked[0]!.preview!.facts).toContainEqual({
      label: 'skill',
      value: expect.stringContaining('running its bundled scripts/count_words.py'),
    });
    expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'count_words', outcome: 'ok' });
  });

  it('runs nothing when the person says no', async () => {
    await boot();
    fx.prompter.answer('deny-once');
    expect(code(await fx.kernel.invoke({ tool: 'count_words', args: { file: 'notes.txt' }, caller: { kind: 'agent' } }))).toBe('PERMISSION_DENIED');
  });

  it('keeps the rest of the skill folder closed: run_command cannot point into it, nor can the script command', async () => {
    const dir = await boot();
    fx.prompter.setFallback('allow-once');
    const cat = await fx.kernel.invoke({ tool: 'run_command', args: { command: `cat ${path.join(dir, 'SKILL.md')}` }, caller: { kind: 'agent' } });
    expect(code(cat)).toBe('COMMAND_BLOCKED');
    const run = await fx.kernel.invoke({
      tool: 'run_command',
      args: { command: `python3 ${path.join(dir, 'scripts', 'count_words.py')} notes.txt` },
      caller: { kind: 'agent' },
    });
    expect(code(run)).toBe('COMMAND_BLOCKED');
    // A path argument into the skill folder is refused by the sandbox.
    const into = await fx.kernel.invoke({ tool: 'count_words', args: { file: path.join(dir, 'SKILL.md') }, caller: { kind: 'agent' } });
    expect(code(into)).toMatch(/PATH_OUTSIDE_ROOT|PATH_PROTECTED/);
  });

  it('refuses to run once the script became a link pointing out of the folder', async () => {
    const dir = await boot();
    const outside = path.join(tempDir('memo-eco-out-'), 'evil.py');
    fs.writeFileSync(outside, 'open("pwned", "w")\n');
    fs.rmSync(path.join(dir, 'scripts', 'count_words.py'));
    fs.symlinkSync(outside, path.join(dir, 'scripts', 'count_words.py'));
    fx.prompter.setFallback('allow-once');
    const r = await fx.kernel.invoke({ tool: 'count_words', args: { file: 'notes.txt' }, caller: { kind: 'agent' } });
    expect(code(r)).toBe('PATH_PROTECTED');
    expect(message(r)).toContain('leads outside the skill folder');
    expect(fs.existsSync(path.join(fx.kernel.config.root, 'pwned'))).toBe(false);
  });
});

describe('opt-in skill folders', () => {
  it('loads a skill from a project .claude/skills and closes that folder to every tool', async () => {
    const fx = makeKernel();
    await fx.kernel.loadPacks(['shell', 'fs-tools']);
    const folder = path.join(fx.root, '.claude', 'skills');
    fs.mkdirSync(folder, { recursive: true });
    fs.cpSync(path.join(FIXTURES, 'extra-keys'), path.join(folder, 'extra-keys'), { recursive: true });
    await fx.kernel.loadSkills([{ dir: folder, source: 'opt-in' }]);
    expect(fx.kernel.skills.get('extra-keys')).toMatchObject({ status: 'loaded', source: 'opt-in', dir: path.join(folder, 'extra-keys') });
    fx.prompter.setFallback('allow-once');
    const call = (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent' } });
    expect(code(await call('read_file', { path: '.claude/skills/extra-keys/SKILL.md' }))).toBe('PATH_PROTECTED');
    expect(code(await call('write_file', { path: '.claude/skills/extra-keys/SKILL.md', content: 'x' }))).toBe('PATH_PROTECTED');
    expect(code(await call('list_directory', { path: '.claude/skills' }))).toBe('PATH_PROTECTED');
    expect(code(await call('run_command', { command: 'cat .claude/skills/extra-keys/SKILL.md' }))).toBe('COMMAND_BLOCKED');
    expect(fs.readFileSync(path.join(folder, 'extra-keys', 'SKILL.md'), 'utf8')).toContain('name: extra-keys');
    // The rest of .claude stays an ordinary folder.
    fs.writeFileSync(path.join(fx.root, '.claude', 'settings.json'), '{}');
    expect(code(await call('read_file', { path: '.claude/settings.json' }))).toBe('ok');
    await fx.close();
  });
});

describe('the skill index offered to the model', () => {
  it('is one line per skill, name and description cut to one line, sorted, without any instructions', async () => {
    const skills = skillsWith('long-description', 'extra-keys', 'no-name');
    const fx = makeKernel();
    await fx.kernel.loadSkills([{ dir: skills, source: 'extra' }]);
    const index = skillIndex(fx.kernel.skills);
    const lines = index.text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^Skills \(call read_skill/);
    expect(lines.slice(1).map((l) => l.slice(0, l.indexOf(':')))).toEqual(['- extra-keys', '- long-description', '- no-name']);
    expect(lines[2]!.length).toBeLessThanOrEqual('- long-description: '.length + INDEX_DESCRIPTION_CHARS);
    expect(lines[2]).toMatch(/…$/);
    expect(index.text).not.toContain('Write the decisions first');
    expect(index).toMatchObject({ chars: index.text.length, tokens: Math.ceil(index.text.length / 3.5), skills: 3 });
    expect(skillIndex(fx.kernel.skills, { count: (t) => t.split(/\s+/).length }).tokens).toBe(index.text.split(/\s+/).length);
    expect(skillIndex([])).toEqual({ text: '', chars: 0, tokens: 0, skills: 0 });
    await fx.close();
  });

  it('stays within one header and 50 short lines for 50 installed skills with full-length descriptions', async () => {
    const skills = tempDir('memo-eco-fifty-');
    for (let i = 0; i < 50; i++) writeSkill(skills, `skill-${String(i).padStart(2, '0')}`, `description: ${`Does task ${i} well. `.repeat(60).slice(0, 1024)}`);
    const fx = makeKernel();
    await fx.kernel.loadSkills([{ dir: skills, source: 'extra' }]);
    const index = skillIndex(fx.kernel.skills);
    expect(index.skills).toBe(50);
    const lines = index.text.trimEnd().split('\n');
    expect(lines).toHaveLength(51);
    for (const l of lines.slice(1)) expect(l.length).toBeLessThanOrEqual('- skill-00: '.length + INDEX_DESCRIPTION_CHARS);
    expect(index.chars).toBeLessThanOrEqual(lines[0]!.length + 1 + 50 * ('- skill-00: '.length + INDEX_DESCRIPTION_CHARS + 1));
    await fx.close();
  });
});
