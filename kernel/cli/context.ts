/**
 * What every command group of the CLI shares: the global options, booting a kernel on them, the
 * folders it loads from, printing, and the two kinds of failure a command reports (a usage error,
 * exit 2; a thing not found or refused, exit 1).
 */
import * as path from 'node:path';
import { Option } from 'commander';
import { reachServer, type ControlConnection } from '../control/control-client.js';
import { isMemoError } from '../errors.js';
import { createKernel, type Kernel } from '../kernel.js';
import { StderrLogger, type Logger } from '../logger.js';
import type { Prompter } from '../permissions/prompter.js';
import type { RateLimitOptions } from '../rate-limit/rate-limiter.js';
import type { PackFolder } from '../packs/pack-loader.js';
import { storedSettings } from '../state/command-store.js';
import type { SkillFolder } from '../skills/skill-manager.js';
import { packFoldersOf, skillFoldersOf } from './stdio-front.js';

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

/** `--no-server` (commander sets `server: false`): a command that could go through a running memo serve uses a kernel of its own. */
export interface ServerOption {
  server?: boolean;
}

export function noServerOption(): Option {
  return new Option('--no-server', 'use a kernel of its own even when memo serve runs on this data folder');
}

/** What a command group gets from the program: the parsed global options and what follows from them. */
export interface Cli {
  g(): GlobalOptions;
  dataDir(): string;
  packFolders(): PackFolder[];
  skillFolders(): SkillFolder[];
  /**
   * A kernel on the global options with every pack and skill loaded (quiet: no info lines).
   * `prompter` null: no face; a permission request waits in the approval broker (memo serve).
   * `rateLimits`: the admin's limits (memo serve --rate-limit); left out, the defaults.
   * `logger`: where the kernel's lines go instead of stderr (a command they are not about keeps them).
   */
  boot(prompter: Prompter | null, quiet?: boolean, rateLimits?: Partial<RateLimitOptions>, logger?: Logger): Promise<Kernel>;
  /**
   * The memo serve running on this data folder, when one answers and serves what this command would
   * load (for a call, `withRoot`: the same sandbox root too); null to use a kernel of its own. Says on
   * stderr, in one line, which it is whenever a socket is there (`quiet`: says nothing).
   */
  server(opts: ServerOption, withRoot?: boolean, quiet?: boolean): Promise<ControlConnection | null>;
  /** A read-only request through the running server, or `own()` on a kernel of its own (no server, or it failed to answer). */
  readVia<T>(opts: ServerOption, op: string, fields: Record<string, unknown>, own: () => Promise<T>): Promise<T>;
  setExit(code: number): void;
}

export function cliContext(g: () => GlobalOptions, setExit: (code: number) => void): Cli {
  const dataDir = () => path.resolve(g().data ?? 'data');
  const cli: Cli = {
    g,
    dataDir,
    packFolders: () => packFoldersOf(g()),
    skillFolders: () => skillFoldersOf(g()),
    async boot(prompter, quiet = true, rateLimits, logger) {
      let kernel: Kernel;
      try {
        // A person's choice for commands where the OS sandbox cannot start (memo settings sandbox).
        const sandbox = (await storedSettings(dataDir(), logger ?? new StderrLogger(true))).sandbox;
        kernel = createKernel({
          root: g().root ?? process.cwd(),
          dataDir: dataDir(),
          ...(sandbox ? { sandboxFallback: sandbox } : {}),
          prompter,
          // No face (memo serve): a request nobody watches is refused at once, saying how to be asked.
          ...(prompter === null ? { unattendedApprovals: 'refuse' as const } : {}),
          logger: logger ?? new StderrLogger(quiet),
          ...(rateLimits ? { rateLimits } : {}),
        });
      } catch (err) {
        if (isMemoError(err)) throw new UsageError(err.message);
        throw err;
      }
      await kernel.loadPacks(cli.packFolders());
      await kernel.loadSkills(cli.skillFolders());
      return kernel;
    },
    async server(opts, withRoot = false, quiet = false) {
      if (opts.server === false) return null;
      const reach = await reachServer({
        dataDir: dataDir(),
        packs: cli.packFolders().map((f) => f.dir),
        skills: cli.skillFolders().map((f) => f.dir),
        ...(withRoot ? { root: g().root ?? process.cwd() } : {}),
      });
      if (reach === null) return null;
      if ('skipped' in reach) {
        if (!quiet) process.stderr.write(`memo: not via the running server: ${reach.skipped}; using a kernel of its own\n`);
        return null;
      }
      if (!quiet) process.stderr.write(`memo: via the running server (pid ${reach.server.pid})\n`);
      return reach.server;
    },
    async readVia(opts, op, fields, own) {
      const server = await cli.server(opts);
      if (server) {
        try {
          return (await server.request(op, fields)) as Awaited<ReturnType<typeof own>>;
        } catch (err) {
          process.stderr.write(`memo: the running server (pid ${server.pid}) did not answer (${(err as Error).message}); using a kernel of its own\n`);
        }
      }
      return own();
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
