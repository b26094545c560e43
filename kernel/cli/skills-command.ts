/** `memo skills list|show|folders`: the SKILL.md bundles found, one skill in full, and the opt-in folders. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { describeProblem } from '../packs/pack-problems.js';
import { DenyingPrompter } from '../permissions/prompter.js';
import { skillFoldersStore } from '../skills/skill-folders.js';
import { oneLine } from '../skills/skill-index.js';
import { registerSkillAuthoring } from './authoring-command.js';
import { NotFound, print, table, UsageError, type Cli } from './context.js';

interface SkillDetail {
  description: string;
  instructions: string;
  tools: Array<{ name: string; command: string; script?: string }>;
  files: string[];
  allowedTools?: string[];
  otherKeys?: Record<string, unknown>;
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
        warnings: (s.warnings ?? []).map((w) => describeProblem(w)),
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
            s.status === 'loaded'
              ? s.warnings.length
                ? `loaded, ${s.warnings.length} warning${s.warnings.length === 1 ? '' : 's'}`
                : 'loaded'
              : `failed: ${s.error}`,
            oneLine(s.description ?? '', 60),
          ]),
        ]),
      );
      const warned = list.filter((s) => s.warnings.length);
      if (warned.length)
        process.stdout.write(`\n${warned.map((s) => `${s.name} (${s.dir}):\n${s.warnings.map((w) => `  warning: ${w}`).join('\n')}`).join('\n')}\n`);
      const optIn = [...new Set(list.filter((s) => s.source === 'opt-in').map((s) => path.dirname(s.dir)))];
      if (optIn.length) process.stdout.write(`\nopt-in folders: ${optIn.join(', ')}\n`);
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
      if (value.tools.length)
        out += `\nCommand tools:\n${value.tools.map((t) => `  ${t.name}: ${t.command}${t.script ? ` ({script} = ${t.script})` : ''}`).join('\n')}\n`;
      if (value.allowedTools) out += `\nAllowed tools (a restriction while a turn follows it): ${value.allowedTools.join(' ')}\n`;
      if (value.otherKeys)
        out += `\nOther keys (kept, not used):\n${Object.entries(value.otherKeys)
          .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
          .join('\n')}\n`;
      if (state.warnings?.length) out += `\nWarnings:\n${state.warnings.map((w) => `  ${describeProblem(w)}`).join('\n')}\n`;
      out += `\nFiles: ${value.files.join(', ')}\n`;
      process.stdout.write(out);
    });
  registerFolderCommands(skills, cli);
}

/**
 * `memo skills folders [list] | add <dir> | remove <dir>`: the opt-in folders (data/skill-folders.json),
 * loaded after skills/ and data/skills, each protected like every skill folder once loaded.
 */
function registerFolderCommands(skills: Command, cli: Cli): void {
  const folders = skills.command('folders').description('opt-in skill folders (e.g. a project .claude/skills, ~/.claude/skills): none unless added');
  folders
    .command('list', { isDefault: true })
    .description('the opt-in folders, in load order')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const list = skillFoldersStore(cli.dataDir()).read().folders;
      if (opts.json) return print(list);
      process.stdout.write(list.length ? `${list.map((f) => `${f}${fs.existsSync(f) ? '' : '  (missing)'}`).join('\n')}\n` : 'No opt-in skill folders.\n');
    });
  folders
    .command('add <dir>')
    .description('load the skills of <dir> too, from the next start (its folder becomes kernel state: no tool can reach into it)')
    .action((dir: string) => {
      const abs = path.resolve(dir);
      if (!fs.existsSync(abs) || !fs.statSync(abs).isDirectory()) throw new UsageError(`${dir} is not a folder.`);
      const inData = path.relative(cli.dataDir(), abs);
      if (inData === '' || !inData.startsWith('..')) throw new UsageError(`${dir} is inside the data folder, whose skills/ is loaded already.`);
      // Every opt-in folder becomes kernel state: one that holds the workspace would close all of it to every tool.
      const root = path.resolve(cli.g().root ?? process.cwd());
      const fromRoot = path.relative(abs, root);
      if (fromRoot === '' || !fromRoot.startsWith('..'))
        throw new UsageError(`${dir} holds the workspace (${root}); as a skill folder it would close all of it to every tool. Name its skills folder instead.`);
      let added = false;
      skillFoldersStore(cli.dataDir()).update((s) => {
        if (s.folders.includes(abs)) return;
        s.folders.push(abs);
        added = true;
      });
      process.stdout.write(
        added
          ? `added ${abs}: its skills load from the next start, and no tool can read or change it from then on.\n`
          : `${abs} is already an opt-in skill folder.\n`,
      );
    });
  folders
    .command('remove <dir>')
    .description('stop loading <dir> (from the next start)')
    .action((dir: string) => {
      const abs = path.resolve(dir);
      let removed = false;
      skillFoldersStore(cli.dataDir()).update((s) => {
        const before = s.folders.length;
        s.folders = s.folders.filter((f) => f !== abs);
        removed = s.folders.length < before;
      });
      if (!removed) throw new NotFound(`${abs} is not an opt-in skill folder (memo skills folders list shows them).`);
      process.stdout.write(`removed ${abs}.\n`);
    });
}
