import * as fs from 'node:fs';
import * as path from 'node:path';
import { runTurn } from '../../../kernel/agent/agent-loop.js';
import { systemPrompt } from '../../../kernel/agent/system-prompt.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider } from '../../helpers/scripted-provider.js';

function skillsFolder(skills: Record<string, string>): string {
  const dir = tempDir('memo-skills-');
  for (const [name, description] of Object.entries(skills)) {
    fs.mkdirSync(path.join(dir, name));
    // A literal block: new lines in a description stay new lines, for the index to fold.
    const block = description
      .split('\n')
      .map((l) => `  ${l}`)
      .join('\n');
    fs.writeFileSync(path.join(dir, name, 'SKILL.md'), `---\nname: ${name}\ndescription: |\n${block}\n---\n\nThe instructions of ${name}.\n`);
  }
  return dir;
}

describe('the system prompt of an interactive turn', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('ends with the skill index in agent mode, one line per loaded skill, and leaves it out in web mode', async () => {
    fx = makeKernel();
    await fx.kernel.loadSkills([
      { dir: skillsFolder({ 'release-notes': 'Writes release notes\nfrom the git log.', 'pdf-forms': 'Fills PDF forms.' }), source: 'extra' },
    ]);
    const agent = systemPrompt(fx.kernel, 'agent');
    expect(agent).toMatch(/^You are Memo/);
    expect(agent).toContain('read_skill');
    expect(agent).toContain('- pdf-forms: Fills PDF forms.');
    expect(agent).toContain('- release-notes: Writes release notes from the git log.');
    expect(agent).not.toContain('The instructions of');
    const web = systemPrompt(fx.kernel, 'web');
    expect(web).toContain('web_search');
    expect(web).not.toContain('pdf-forms');
  });

  it('has no index when no skill is loaded', () => {
    fx = makeKernel();
    expect(systemPrompt(fx.kernel, 'agent')).not.toContain('read_skill with a name');
  });

  it('reaches the model as the system message of every request of the turn', async () => {
    fx = makeKernel();
    await fx.kernel.loadSkills([{ dir: skillsFolder({ 'release-notes': 'Writes release notes.' }), source: 'extra' }]);
    const provider = new ScriptedProvider(() => reply('done'));
    await runTurn(fx.kernel, { provider, model: 'm', conversationId: 'c', history: [], userMessage: 'hi', systemPrompt: systemPrompt(fx.kernel, 'agent') });
    expect(provider.requests[0]!.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('- release-notes: Writes release notes.') });
  });
});
