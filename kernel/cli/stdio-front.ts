/**
 * One kernel per data folder: `memo serve --stdio` started while a `memo serve` holds the same data
 * folder (the desktop config that memo serve itself prints does exactly this) becomes a thin MCP
 * front for it. It asks the server's control socket for `mcp.stdio`, and from the `upgraded` line on
 * it copies bytes: its stdin to the socket, the socket to its stdout. The server serves the client as
 * an external MCP client of its own kernel, so the client's calls share that kernel's approvals inbox
 * (`memo approvals list`, the console), rate limits and audit chain, and a request whose client
 * exits is withdrawn when the connection closes.
 *
 * It loads no kernel and no MCP SDK: bin/memo runs it before the CLI (`frontFromArgv`), so a
 * desktop client's launch costs a node start and one socket round trip. When nothing runs on the data
 * folder, or the server serves other folders, it returns null and `memo serve --stdio` runs a kernel
 * of its own, as before.
 */
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ControlFailure, reachServer } from '../control/control-client.js';
import { CAPABILITY_ENV } from '../mcp/defaults.js';
import type { PackFolder } from '../packs/pack-loader.js';
import type { SkillFolder } from '../skills/skill-manager.js';
import { optInSkillFolders } from '../skills/skill-folders.js';
import { BUILTIN_PACKS_DIR, BUILTIN_SKILLS_DIR } from '../util/install-folders.js';

type Globals = { root?: string | undefined; data?: string | undefined; packs?: string | undefined; skills?: string | undefined };

/** The pack folders a command on these global options loads (built-in, then `--packs` or `data/packs`). */
export function packFoldersOf(g: Globals): PackFolder[] {
  const dataDir = path.resolve(g.data ?? 'data');
  return [
    { dir: BUILTIN_PACKS_DIR, source: 'builtin' },
    { dir: path.resolve(g.packs ?? path.join(dataDir, 'packs')), source: 'extra' },
  ];
}

/** The skill folders: built-in, `--skills` or `data/skills`, and the folders a person opted into (memo skills folders add). */
export function skillFoldersOf(g: Globals): SkillFolder[] {
  const dataDir = path.resolve(g.data ?? 'data');
  return [
    { dir: BUILTIN_SKILLS_DIR, source: 'builtin' },
    { dir: path.resolve(g.skills ?? path.join(dataDir, 'skills')), source: 'extra' },
    ...optInSkillFolders(dataDir).map((dir) => ({ dir, source: 'opt-in' as const })),
  ];
}

/** What a server must serve for a stdio client to join it: the data folder, the root, the pack and skill folders. */
export interface CliPlace {
  dataDir: string;
  root: string;
  packs: string[];
  skills: string[];
}

export function cliPlace(g: Globals): CliPlace {
  return {
    dataDir: path.resolve(g.data ?? 'data'),
    root: g.root ?? process.cwd(),
    packs: packFoldersOf(g).map((f) => f.dir),
    skills: skillFoldersOf(g).map((f) => f.dir),
  };
}

/** What the front asks the server to serve: the profile options of `memo serve`, and the write capability of its environment. */
export interface FrontRequest {
  tools?: string;
  profile?: string;
  search?: boolean;
  capability?: string;
}

/** The server refused the front's options (an unknown profile, --tools and --profile together): a usage error. */
export class FrontUsage extends Error {}

export interface FrontIo {
  stdin: Readable;
  stdout: Writable;
  /** One line per event, for the client's log. */
  say(line: string): void;
}

const processIo: FrontIo = { stdin: process.stdin, stdout: process.stdout, say: (l) => process.stderr.write(`memo: ${l}\n`) };

/**
 * Joins the memo serve running on `place.dataDir` and carries MCP between `io` and it until either
 * side ends: resolves with the exit code then (0: the client closed stdin or a signal stopped it;
 * 1: the server went away). Resolves null without touching `io` when there is no server to join (it
 * says why on `io.say` when one is there but does not fit). Throws FrontUsage for options the server
 * refuses.
 */
export async function joinServer(place: CliPlace, request: FrontRequest, io: FrontIo = processIo): Promise<number | null> {
  const reach = await reachServer({ dataDir: place.dataDir, packs: place.packs, skills: place.skills, root: place.root });
  if (reach === null) return null;
  if ('skipped' in reach) {
    io.say(
      `not joining the memo serve on this data folder: ${reach.skipped}; running a kernel of its own, whose requests memo approvals and the console of that server cannot see`,
    );
    return null;
  }
  const server = reach.server;
  let socket;
  try {
    socket = await server.upgrade('mcp.stdio', { ...request });
  } catch (err) {
    if (err instanceof ControlFailure && err.code === 'USAGE') throw new FrontUsage(err.message);
    const older = err instanceof ControlFailure && err.code === 'BAD_REQUEST';
    io.say(
      older
        ? `the memo serve running on this data folder (pid ${server.pid}) is an older memo that cannot take stdio clients; running a kernel of its own`
        : `could not join the memo serve running on this data folder (pid ${server.pid}): ${(err as Error).message}; running a kernel of its own`,
    );
    return null;
  }
  io.say(
    `serving MCP over stdio through the memo serve running on this data folder (pid ${server.pid}): its approvals inbox (memo approvals list --watch, the console), limits and audit apply`,
  );
  return new Promise<number>((resolve) => {
    let code = 1;
    const stop = () => {
      code = 0;
      socket.destroy();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // The client hung up: the socket ends, and the server withdraws what it was waiting on.
    io.stdin.once('end', () => (code = 0));
    socket.on('error', () => {
      // 'close' follows
    });
    socket.once('close', () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      io.stdin.unpipe(socket);
      io.stdin.pause();
      if (code !== 0) io.say(`the memo serve (pid ${server.pid}) this stdio server joined has stopped; restart the MCP client to reconnect`);
      resolve(code);
    });
    io.stdin.pipe(socket);
    socket.pipe(io.stdout, { end: false });
    socket.resume();
  });
}

/** `memo [global options] serve --stdio [--tools L | --profile P] [--search] [--services]`, read without the CLI; null for anything else. */
function parseArgs(args: readonly string[]): { place: Globals; request: FrontRequest } | null {
  const values: Record<string, string> = {};
  const takes = new Set(['--root', '--data', '--packs', '--skills', '--tools', '--profile']);
  let serve = false;
  let stdio = false;
  let search = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const eq = a.indexOf('=');
    const name = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    if (takes.has(name)) {
      const value = eq > 0 && name !== a ? a.slice(eq + 1) : args[++i];
      if (value === undefined || name in values) return null;
      values[name] = value;
    } else if (a === 'serve' && !serve) serve = true;
    else if (a === '--stdio' && serve) stdio = true;
    else if (a === '--search' && serve) search = true;
    // The server's services run already; joining it needs no services of this process.
    else if (a === '--services' && serve) continue;
    // Anything else (--no-server, --json, --help, a subcommand): the CLI decides.
    else return null;
  }
  if (!serve || !stdio) return null;
  return {
    place: { root: values['--root'], data: values['--data'], packs: values['--packs'], skills: values['--skills'] },
    request: {
      ...(values['--tools'] !== undefined ? { tools: values['--tools'] } : {}),
      ...(values['--profile'] !== undefined ? { profile: values['--profile'] } : {}),
      ...(search ? { search: true } : {}),
    },
  };
}

/**
 * bin/memo's first step for `memo serve --stdio`: joins a running server and resolves with the exit
 * code, or resolves null (not this command, nothing to join, options it does not read) and the CLI
 * runs as usual.
 */
export async function frontFromArgv(args: readonly string[]): Promise<number | null> {
  const parsed = parseArgs(args);
  if (!parsed) return null;
  const capability = process.env[CAPABILITY_ENV];
  try {
    const code = await joinServer(cliPlace(parsed.place), { ...parsed.request, ...(capability ? { capability } : {}) });
    return code;
  } catch (err) {
    if (err instanceof FrontUsage) {
      process.stderr.write(`memo: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}
