/** `memo skills list|show`: the SKILL.md bundles found, and one skill in full. */
import type { Command } from 'commander';
import { DenyingPrompter } from '../permissions/prompter.js';
import { registerSkillAuthoring } from './authoring-command.js';
import { NotFound, print, table, type Cli } from './context.js';

interface SkillDetail {
  description: string;
  instructions: string;
  tools: Array<{ name: string; command: string }>;
  files: string[];
}

export function registerSkillsCommands(program: Command, cli: Cli): void {
  const skills = program.command('skills').description('SKILL.md bundles');
  registerSkillAuthoring(skills, cli);
  skills
    .command('list')
    .description('every skill found, loaded or skipped (with the reason)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const kernel = await cli.boot(new DenyingPrompter());
      const list = kernel.skills.list().map((s) => ({
        name: s.name,
        description: s.skill?.description ?? null,
        source: s.source,
        status: s.status,
        ...(s.error ? { error: s.error } : {}),
        tools: s.skill?.tools.map((t) => t.name) ?? [],
        dir: s.dir,
      }));
      await kernel.shutdown();
      if (opts.json) return print(list);
      if (list.length === 0) return void process.stdout.write('No skills found.\n');
      process.stdout.write(
        table([
          ['SKILL', 'SOURCE', 'TOOLS', 'STATUS', 'DESCRIPTION'],
          ...list.map((s) => [
            s.name,
            s.source,
            s.tools.join(',') || '-',
            s.status === 'loaded' ? 'loaded' : `failed: ${s.error}`,
            (s.description ?? '').slice(0, 60),
          ]),
        ]),
      );
    });
  skills
    .command('show <name>')
    .description("a skill's description, instructions, bundled files and command tools")
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const kernel = await cli.boot(new DenyingPrompter());
      const state = kernel.skills.get(name);
      const detail =
        state?.status === 'loaded' ? await kernel.invoke({ tool: 'read_skill', args: { name }, caller: { kind: 'cli', id: 'memo skills show' } }) : null;
      await kernel.shutdown();
      if (!state) throw new NotFound(`There is no skill "${name}".`);
      if (state.status === 'failed') throw new NotFound(`Skill "${name}" was skipped: ${state.error}`);
      // read_skill's result, as the kernel's own skill tool returns it.
      const value = detail?.ok ? (detail.value as unknown as SkillDetail) : null;
      if (opts.json) return print(value);
      if (!value) throw new NotFound(`Skill "${name}" could not be read${detail && !detail.ok ? `: ${detail.error.message}` : ''}.`);
      let out = `${name}: ${value.description}\n\n${value.instructions}\n`;
      if (value.tools.length) out += `\nCommand tools:\n${value.tools.map((t) => `  ${t.name}: ${t.command}`).join('\n')}\n`;
      out += `\nFiles: ${value.files.join(', ')}\n`;
      process.stdout.write(out);
    });
}
