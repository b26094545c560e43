/**
 * Authoring commands: `memo plugins new|validate|types` and `memo skills validate`. They read and
 * write the folders they are given and register nothing with any kernel.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { listPackDirs } from '../packs/pack-loader.js';
import type { Problem } from '../packs/pack-problems.js';
import { TOOL_ARGS_FILE } from '../packs/tool-types.js';
import { PACK_ID } from '../tools/tool-registry.js';
import { NotFound, print, UsageError, type Cli } from './context.js';

function folderOf(dir: string): string {
  const abs = path.resolve(dir);
  if (!fs.existsSync(abs) || !fs.statSync(abs).isDirectory()) throw new UsageError(`${dir} is not a folder.`);
  return abs;
}

/**
 * Prints the problems (each with the offending line when it has one) or the OK line; exit 1 on any
 * problem. Warnings (a skill's off-spec but harmless parts, a pack's keywords that add nothing) are
 * printed too and change no exit code.
 */
async function report(cli: Cli, dir: string, problems: Problem[], ok: string, json: boolean | undefined, warnings: Problem[] = []): Promise<void> {
  if (json) print({ ok: problems.length === 0, problems, ...(warnings.length ? { warnings } : {}) });
  else if (problems.length === 0) {
    const { describeProblem: describe } = await import('../packs/pack-problems.js');
    // A warning with a line is shown under its line (a skill's SKILL.md); a pack's name only the tool and field.
    const source = (w: Problem) => (w.line !== undefined ? fs.readFileSync(path.join(dir, w.file), 'utf8') : undefined);
    process.stdout.write(
      `${warnings.map((w) => `warning: ${describe(w, source(w))}\n`).join('')}OK ${ok}${warnings.length ? ` (${warnings.length} warning${warnings.length === 1 ? '' : 's'})` : ''}\n`,
    );
  } else {
    const { describeProblem: describe } = await import('../packs/pack-problems.js');
    const text = problems.map((p) => {
      let source: string | undefined;
      if (p.line !== undefined) {
        try {
          source = fs.readFileSync(path.join(dir, p.file), 'utf8');
        } catch {
          // shown without the line
        }
      }
      return describe(p, source);
    });
    process.stdout.write(`${text.join('\n')}\n${problems.length} problem${problems.length === 1 ? '' : 's'} in ${dir}\n`);
  }
  if (problems.length) cli.setExit(1);
}

export function registerPluginAuthoring(plugins: Command, cli: Cli): void {
  plugins
    .command('validate <dir>')
    .description('check a pack folder as the kernel would load it, registering nothing; every problem, located (exit 1 if any)')
    .option('--json', 'print {ok, problems:[{file,line,column,tool,field,message}]}')
    .action(async (dir: string, opts: { json?: boolean }) => {
      const abs = folderOf(dir);
      // The checker loads the skill parser, acorn and Ajv: only this command pays for them.
      const { checkPackFolder } = await import('../packs/pack-check.js');
      const { manifest, problems, warnings } = await checkPackFolder(abs);

      const summary = manifest
        ? `pack ${manifest.id} ${manifest.version}: ${manifest.tools.length} tool${manifest.tools.length === 1 ? '' : 's'} (${manifest.tools.map((t) => t.name).join(', ')})`
        : '';
      await report(cli, abs, problems, summary, opts.json, warnings);
    });

  plugins
    .command('types <dir>')
    .description(`write <dir>/${TOOL_ARGS_FILE}: the handlers' argument types, generated from plugin.json`)
    .action(async (dir: string) => {
      const abs = folderOf(dir);
      const { generateToolArgs } = await import('../packs/tool-types.js');
      let manifest: unknown;
      try {
        manifest = JSON.parse(fs.readFileSync(path.join(abs, 'plugin.json'), 'utf8'));
      } catch (err) {
        throw new NotFound(`${path.join(dir, 'plugin.json')} cannot be read as JSON (${(err as Error).message}); memo plugins validate ${dir} says more.`);
      }
      const target = path.join(abs, TOOL_ARGS_FILE);
      fs.writeFileSync(target, generateToolArgs(manifest as Parameters<typeof generateToolArgs>[0]));
      process.stdout.write(`wrote ${target}\n`);
    });

  plugins
    .command('new <id>')
    .description('create a pack folder: one read tool, one writing tool with a preview, a README and a test (node --test)')
    .option('--ts', 'TypeScript, typed by tool-args.ts generated from plugin.json')
    .option('--dir <folder>', 'the pack folder (default packs/<id>: a folder of packs of its own); its name must be the id')
    .action(async (id: string, opts: { ts?: boolean; dir?: string }) => {
      if (!PACK_ID.test(id) || id.length > 64)
        throw new UsageError(`"${id}" is not a pack id: use kebab-case (lowercase letters, digits, single hyphens), e.g. my-notes.`);
      const dir = path.resolve(opts.dir ?? path.join('packs', id));
      if (path.basename(dir) !== id) throw new UsageError(`The pack folder must be named after the id: ${dir} is not ".../${id}".`);
      if (fs.existsSync(dir) && (!fs.statSync(dir).isDirectory() || fs.readdirSync(dir).length > 0))
        throw new UsageError(`${dir} already exists and is not an empty folder; pick another id or --dir.`);
      const taken = listPackDirs(cli.packFolders()).find((f) => path.basename(f.dir) === id);
      if (taken) throw new UsageError(`A pack with id "${id}" already exists (${taken.dir}); pick another id.`);
      const { scaffoldDeps, scaffoldFiles } = await import('./pack-scaffold.js');
      const files = scaffoldFiles(id, opts.ts === true, scaffoldDeps());
      fs.mkdirSync(dir, { recursive: true });
      for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
      const shown = path.relative(process.cwd(), dir) || '.';
      const parent = path.dirname(dir);
      // Already in a folder memo loads packs from (data/packs, --packs): nothing to copy or point at.
      const loadedFrom = cli.packFolders().find((f) => path.resolve(f.dir) === parent);
      // A folder memo loads packs from is the kernel's own: no tool may read or write in it. One that
      // holds the workspace (--packs .) would close the whole workspace to every tool.
      const root = path.resolve(cli.g().root ?? process.cwd());
      const holdsWorkspace = root === parent || root.startsWith(parent + path.sep);
      const rel = (p: string) => path.relative(process.cwd(), p) || '.';
      const next: Array<[string, string]> = [
        [
          `(cd ${shown} && npm install && node --test)`,
          opts.ts ? 'link memo-kernel, install typescript, build index.js, run its test' : 'link memo-kernel (this Memo), run its test',
        ],
        loadedFrom
          ? ['memo tools list', `memo loads it from ${rel(parent)}`]
          : holdsWorkspace
            ? [
                `mkdir -p packs && mv ${shown} packs/ && memo --packs packs tools list`,
                `into a folder of packs of its own: memo --packs ${rel(parent)} would close ${rel(parent)}, your workspace, to every tool`,
              ]
            : [
                `memo --packs ${rel(parent)} tools list`,
                `load it from where it is (or move it into ${rel(path.resolve(cli.packFolders().find((f) => f.source === 'extra')?.dir ?? 'data/packs'))})`,
              ],
      ];
      const width = Math.max(...next.map(([c]) => c.length));
      process.stdout.write(
        `Created ${shown}/: ${Object.keys(files).join(', ')}\n\nNext:\n${next.map(([c, what]) => `  ${c.padEnd(width)}   # ${what}\n`).join('')}`,
      );
    });
}

export function registerSkillAuthoring(skills: Command, cli: Cli): void {
  skills
    .command('validate <dir>')
    .description('check a skill folder (SKILL.md) as the kernel would load it, registering nothing; every problem, located (exit 1 if any)')
    .option('--json', 'print {ok, problems:[{file,line,column,tool,field,message}]}')
    .action(async (dir: string, opts: { json?: boolean }) => {
      const abs = folderOf(dir);
      const { checkSkillFolder } = await import('../packs/pack-check.js');
      const { name, tools, problems, warnings } = checkSkillFolder(abs);

      await report(
        cli,
        abs,
        problems,
        `skill ${name}: ${tools.length} command tool${tools.length === 1 ? '' : 's'}${tools.length ? ` (${tools.join(', ')})` : ''}`,
        opts.json,
        warnings,
      );
    });
}
