import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';

/** What an outside tester did with skill command tools, each row a real run through the kernel. */
function writeSkill(base: string, name: string, frontmatter: string): void {
  const dir = path.join(base, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'), `---\n${frontmatter}\n---\n# ${name}\n`);
}

const tool = (name: string, command: string, params: string[], extra = '') => `tools:
  - name: ${name}
    description: ${name} for tests.
    command: "${command}"
    parameters:
      type: object
      properties: { ${params.map((p) => `${p}: { type: string }`).join(', ')} }
      required: [${params.join(', ')}]
${extra}`;

const code = (r: ToolResult) => (r.ok ? 'ok' : r.error.code);

describe('skill command tools at the trust boundary', () => {
  let fx: Fixture;
  let root: string;
  let skills: string;
  const call = (name: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool: name, args, caller: { kind: 'agent' } });

  beforeEach(() => {
    root = tempDir('memo-skillsec-root-');
    skills = tempDir('memo-skillsec-skills-');
  });
  afterEach(async () => fx?.close());

  async function boot(): Promise<void> {
    fx = makeKernel({ root, dataDir: path.join(root, 'data') });
    await fx.kernel.loadSkills([{ dir: skills, source: 'extra' }]);
    fx.prompter.setFallback('allow-once');
  }

  it.each([
    ['two placeholders glued into an option', { a: '--upload-', b: 'pack=touch pwned' }],
    ['a first placeholder that starts with a dash', { a: '-', b: '-upload-pack=touch pwned' }],
    ['an empty first placeholder and a dashed second', { a: '', b: '--exec=id' }],
  ])('refuses %s: values never make an option', async (_what, args) => {
    writeSkill(skills, 'glue', `name: glue\ndescription: Glues.\n${tool('glue_it', "printf '%s' {a}{b}", ['a', 'b'])}`);
    await boot();
    const r = await call('glue_it', args);
    expect(!r.ok && r.error).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('would be read as an option') });
    expect(fs.existsSync(path.join(root, 'pwned'))).toBe(false);
  });

  it('keeps an option whose dash is the template own literal text', async () => {
    writeSkill(skills, 'fmt', `name: fmt\ndescription: Formats.\n${tool('fmt_it', 'printf --format={a}', ['a'])}`);
    await boot();
    // printf has no --format; what matters is that the argument reached it as the template made it.
    const r = await call('fmt_it', { a: 'x' });
    expect(r.ok && (r.value as { command: string }).command).toBe('printf --format=x');
  });

  it('resolves paths: with write intent, so a skill command cannot write into .git/hooks', async () => {
    execFileSync('git', ['init', '-q', root]);
    writeSkill(skills, 'writer', `name: writer\ndescription: Writes.\n${tool('write_to', 'touch {target}', ['target'], '    paths: [target]')}`);
    await boot();
    const r = await call('write_to', { target: '.git/hooks/pre-commit' });
    expect(code(r)).toBe('PATH_PROTECTED');
    expect(fs.existsSync(path.join(root, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it.each(['data/permissions.json', 'data/packs/evil/plugin.json', 'DATA/agent-audit.jsonl'])(
    'refuses a path: argument into the data folder (%s)',
    async (target) => {
      writeSkill(skills, 'writer', `name: writer\ndescription: Writes.\n${tool('write_to', 'touch {target}', ['target'], '    paths: [target]')}`);
      await boot();
      expect(code(await call('write_to', { target }))).toBe('PATH_PROTECTED');
      expect(fs.existsSync(path.join(root, 'data', 'packs', 'evil'))).toBe(false);
    },
  );

  it('refuses a plain argument pointing into the data folder through the judge, before anyone is asked', async () => {
    writeSkill(skills, 'reader', `name: reader\ndescription: Reads.\n${tool('cat_it', 'cat {file}', ['file'])}`);
    await boot();
    const r = await call('cat_it', { file: 'data/agent-audit.jsonl' });
    expect(!r.ok && r.error).toMatchObject({ code: 'COMMAND_BLOCKED', message: expect.stringContaining('kernel-state') });
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('runs a command in the skill own folder, reading its bundled files there', async () => {
    writeSkill(
      skills,
      'bundled',
      `name: bundled\ndescription: Bundled.\n${tool('show_notes', 'cat notes.txt', [], '    cwd: skill').replace('required: []', 'required: []')}`,
    );
    fs.writeFileSync(path.join(skills, 'bundled', 'notes.txt'), 'bundled notes\n');
    await boot();
    const r = await call('show_notes', {});
    expect(r.ok && (r.value as { stdout: string }).stdout).toBe('bundled notes\n');
  });

  it('asks every time for a skill command the judge cannot vouch for, whatever is stored', async () => {
    writeSkill(skills, 'inline', `name: inline\ndescription: Inline.\n${tool('py_it', "python3 -c 'print(1)'", [])}`);
    await boot();
    fx.kernel.permissions.set({ tool: 'py_it', decision: 'allow', plugin: 'skill-inline', scope: 'forever' }, new Date());
    fx.prompter.answer('deny-once');
    expect(code(await call('py_it', {}))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked[0]).toMatchObject({ standingApprovalAllowed: false, concern: { verdict: 'ask' } });
  });
});
