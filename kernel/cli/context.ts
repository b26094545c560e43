/**
 * What every command group of the CLI shares: the global options, booting a kernel on them, the
 * folders it loads from, printing, and the two kinds of failure a command reports (a usage error,
 * exit 2; a thing not found or refused, exit 1).
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMemoError } from '../errors.js';
import { createKernel, type Kernel } from '../kernel.js';
import { StderrLogger } from '../logger.js';
import type { Prompter } from '../permissions/prompter.js';
import type { PackFolder } from '../packs/pack-loader.js';
import type { SkillFolder } from '../skills/skill-manager.js';

/** A mistake in how the command was called: exit code 2, one line, nothing written. */
export class UsageError extends Error {}

/** The thing asked about does not exist or was refused: exit code 1, one line. */
export class NotFound extends Error {}

export interface GlobalOptions {
  root?: string;
  data?: string;
  packs?: string;
  skills?: string;
}

/** Built-in packs and skills sit beside the kernel: `plugins/`, `skills/` in a checkout, under `dist/` once compiled. */
export const BUILTIN_PACKS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../plugins');
export const BUILTIN_SKILLS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../skills');

/** What a command group gets from the program: the parsed global options and what follows from them. */
export interface Cli {
  g(): GlobalOptions;
  dataDir(): string;
  packFolders(): PackFolder[];
  skillFolders(): SkillFolder[];
  /** A kernel on the global options with every pack and skill loaded (quiet: no info lines). */
  boot(prompter: Prompter, quiet?: boolean): Promise<Kernel>;
  setExit(code: number): void;
}

export function cliContext(g: () => GlobalOptions, setExit: (code: number) => void): Cli {
  const dataDir = () => path.resolve(g().data ?? 'data');
  const cli: Cli = {
    g,
    dataDir,
    packFolders: () => [
      { dir: BUILTIN_PACKS_DIR, source: 'builtin' },
      { dir: path.resolve(g().packs ?? path.join(dataDir(), 'packs')), source: 'extra' },
    ],
    skillFolders: () => [
      { dir: BUILTIN_SKILLS_DIR, source: 'builtin' },
      { dir: path.resolve(g().skills ?? path.join(dataDir(), 'skills')), source: 'extra' },
    ],
    async boot(prompter, quiet = true) {
      let kernel: Kernel;
      try {
        kernel = createKernel({ root: g().root ?? process.cwd(), dataDir: dataDir(), prompter, logger: new StderrLogger(quiet) });
      } catch (err) {
        if (isMemoError(err)) throw new UsageError(err.message);
        throw err;
      }
      await kernel.loadPacks(cli.packFolders());
      await kernel.loadSkills(cli.skillFolders());
      return kernel;
    },
    setExit,
  };
  return cli;
}

export function print(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}
