/**
 * `memo permissions list|allow|deny|revoke|always-allow`: the stored decisions (forever, until a moment, for one
 * conversation) and the person's global always-allow setting, all in `data/permissions.json` (or,
 * with MEMO_DATABASE_URL, the shared database's memo_kernel). The file is the data folder's, out of
 * every tool's reach: only this command and host apps change it (a running kernel re-reads it at its
 * next call; instances on the database hear of it within a second).
 */
import * as path from 'node:path';
import type { Command } from 'commander';
import { cliRecorded } from './admin-record.js';
import { MemoryLogger, StderrLogger } from '../logger.js';
import { PermissionStore, type ExternalWritesSetting, type StoredDecision } from '../permissions/permission-store.js';
import { withCommandStore } from '../state/command-store.js';
import { NotFound, print, table, UsageError, type Cli } from './context.js';
import { moment } from './moments.js';
import { isClientName } from '../util/mcp-settings.js';
import { askedEveryTimeMessage, runsCommands, standingAllow } from '../permissions/standing-rules.js';
import { withDidYouMean } from '../util/did-you-mean.js';
import type { ToolSpec } from '../tools/contract.js';

/** How long a decision lasts, as the list shows it: `forever`, `until 2026-11-30T20:15Z (in 12 min)`, `conversation <id>`. */
export function scopeText(d: StoredDecision, now: number): string {
  if (d.scope === 'until') return `until ${d.expiresAt ? moment(Date.parse(d.expiresAt), now) : '(no expiry)'}`;
  if (d.scope === 'conversation') return `conversation ${d.conversationId ?? '?'}`;
  return 'forever';
}

/** The table `memo permissions list` prints: the decisions in force at `now`. */
export function decisionTable(decisions: StoredDecision[], now: number): string {
  if (decisions.length === 0) return 'No stored permission decisions.\n';
  return table([
    ['TOOL', 'DECISION', 'SCOPE', 'PACK', 'SINCE'],
    ...decisions.map((d) => [d.tool, d.decision, scopeText(d, now), d.plugin ?? '-', d.at || '-']),
  ]);
}

/** What the global setting covers and what it never does (the gate's rules: permission-gate.ts). */
const ALWAYS_ALLOW_COVERS = [
  "It covers: calls made by the kernel's own agent turns and by routines, to medium and dangerous",
  'tools (confirm-always tools included), without asking.',
  'It never covers:',
  '  - deletes (effect: delete): asked every time;',
  '  - commands the judge cannot vouch for (inline interpreter code, options that run commands): asked every time;',
  '  - outside callers: MCP clients (whose writes also need a write capability of a running agent turn)',
  '    and memo tools call are asked as before;',
  '  - a stored deny, which still refuses.',
].join('\n');

/** What `memo permissions allow|deny` needs to know of a tool: its danger, effect and confirm, its pack, and whether it runs commands. */
type ToolFacts = Pick<ToolSpec, 'danger' | 'effect' | 'confirm'> & { plugin: string; runsCommands: boolean };

/**
 * The tool as this data folder's packs and skills declare it, a disabled pack's included (a kernel
 * of its own, loaded silently: a pack's or skill's load warnings are not about a permission; memo
 * tools list and memo plugins list say them); NotFound when none is named so, with the name meant
 * when one is close.
 */
async function toolSpec(cli: Cli, name: string): Promise<ToolFacts> {
  const kernel = await cli.boot(null, true, undefined, new MemoryLogger());
  try {
    const tools = kernel.registry.list({ includeDisabled: true });
    const tool = tools.find((t) => t.spec.name === name);
    if (!tool) {
      throw new NotFound(
        withDidYouMean(
          `there is no tool named ${name} in the packs and skills of this data folder (memo tools list shows them; a pack or skill kept elsewhere needs --packs DIR or --skills DIR before the command)`,
          name,
          tools.map((t) => t.spec.name),
        ),
      );
    }
    const { danger, effect, confirm } = tool.spec;
    return { danger, effect, plugin: tool.pack.id, runsCommands: runsCommands(tool), ...(confirm ? { confirm } : {}) };
  } finally {
    await kernel.shutdown();
  }
}

/** Runs `use` on the stored decisions; what it changed is saved (committed, on a database) before this resolves. */
function withStore<R>(cli: Cli, use: (store: PermissionStore) => R): Promise<R> {
  const logger = new StderrLogger();
  return withCommandStore(cli.dataDir(), logger, (db) => new PermissionStore(path.join(cli.dataDir(), 'permissions.json'), logger, db), use);
}

/** What external writes mean once on (the gate's rules: tool-pipeline.ts checkCaller, permission-gate.ts). */
const EXTERNAL_WRITES_MEAN = [
  'Each write such a client asks for waits in the approvals inbox (memo approvals list --watch, the web console)',
  'and runs only if a person allows that one call (allow-once or deny-once): stored allows, session grants and',
  'always-allow never answer it; a stored deny still refuses it.',
].join('\n');
/** Why --client is a label and not a credential. */
const CLIENT_NAME_CLAIM =
  'A client name is what the client declares about itself (clientInfo.name): anyone holding a token can claim it, so it chooses which clients may ask, not who is asking. Per-client tokens (memo serve token add) are the credential.';

/** What external writes are set to, as `memo permissions external-writes status` says it. */
function externalWritesText(setting: ExternalWritesSetting, verb: string): string {
  if (setting.all)
    return `External writes ${verb} ON for every external MCP client${setting.clients.length ? ` (also named: ${setting.clients.join(', ')})` : ''}.\n${EXTERNAL_WRITES_MEAN}\nTurn off with: memo permissions external-writes off\n`;
  if (setting.clients.length)
    return `External writes ${verb} ON for MCP clients that declare the name ${setting.clients.map((c) => JSON.stringify(c)).join(', ')}; off for the rest.\n${EXTERNAL_WRITES_MEAN}\n${CLIENT_NAME_CLAIM}\nTurn off with: memo permissions external-writes off [--client NAME]\n`;
  return `External writes ${verb} off: external MCP clients may use read tools only (writes are refused at once, saying how to turn this on).\n`;
}

export function registerPermissionsCommands(program: Command, cli: Cli): void {
  const permissions = program
    .command('permissions')
    .description('stored permission decisions (forever, timed, per conversation) and the global always-allow setting');
  permissions
    .command('list')
    .option('--json', 'print JSON: the decisions in force, each with its scope (and expiresAt or conversationId)')
    .description('list the stored decisions in force (expired ones left out)')
    .action(async (opts: { json?: boolean }) => {
      const now = Date.now();
      const { list, alwaysAllow, external } = await withStore(cli, (store) => ({
        list: store.list(now),
        alwaysAllow: store.alwaysAllow,
        external: store.externalWrites,
      }));
      if (opts.json) return print(list);
      if (alwaysAllow) process.stdout.write('Always allow is ON for agent turns and routines (memo permissions always-allow status).\n');
      if (external.all || external.clients.length)
        process.stdout.write(
          `External writes are ON for ${external.all ? 'every external MCP client' : external.clients.map((c) => JSON.stringify(c)).join(', ')}, each write asked (memo permissions external-writes status).\n`,
        );
      process.stdout.write(decisionTable(list, now));
    });
  permissions
    .command('revoke <tool>')
    .description("remove a tool's stored decisions, every scope (it will be asked again)")
    .action(async (toolName: string) => {
      const now = Date.now();
      // Nothing stored: nothing changes, and nothing goes on the record.
      const had = await withStore(cli, (store) => store.list().filter((d) => d.tool === toolName));
      const revoked =
        had.length > 0 &&
        (await cliRecorded(cli, { action: 'permission.revoke', target: toolName, change: { scopes: had.map((d) => d.scope) } }, () =>
          withStore(cli, (store) => store.revoke(toolName)),
        ));
      if (revoked) {
        const what = had.map((d) => `${d.decision} ${scopeText(d, now)}`).join('; ');
        process.stdout.write(`Revoked the stored decision${had.length > 1 ? 's' : ''} for ${toolName} (${what}).\n`);
      } else {
        // The names it could have meant: those with a stored decision (revoke changes nothing else).
        // Typos only (two edits at most): the name given may be another tool's, with nothing stored.
        const stored = await withStore(cli, (store) => store.list().map((d) => d.tool));
        process.stderr.write(`memo: ${withDidYouMean(`there is no stored decision for ${toolName}.`, toolName, new Set(stored), 2)}\n`);
        cli.setExit(1);
      }
    });
  permissions
    .command('allow <tool>')
    .option('--minutes <n>', 'for this many minutes only (default: until revoked)')
    .description('allow a tool ahead of time for every caller, so nobody needs to be watching when an MCP client or a routine calls it')
    .action(async (toolName: string, opts: { minutes?: string }) => {
      const minutes = opts.minutes === undefined ? undefined : Number(opts.minutes);
      if (minutes !== undefined && (!Number.isInteger(minutes) || minutes < 1)) throw new UsageError('--minutes must be a whole number of at least 1');
      const spec = await toolSpec(cli, toolName);
      const rule = standingAllow(spec);
      if (rule.kind === 'safe') {
        process.stdout.write(`${toolName} is safe: it runs without asking already. Nothing was stored.\n`);
        return;
      }
      if (rule.kind === 'asked-every-time') throw new UsageError(askedEveryTimeMessage(toolName, rule.why));
      const at = new Date();
      const expiresAt = minutes === undefined ? undefined : new Date(at.getTime() + minutes * 60_000).toISOString();
      const decision = { plugin: spec.plugin, scope: expiresAt ? ('until' as const) : ('forever' as const), ...(expiresAt ? { expiresAt } : {}) };
      await cliRecorded(cli, { action: 'permission.allow', target: toolName, change: decision }, () =>
        withStore(cli, (store) => store.set({ tool: toolName, decision: 'allow', ...decision }, at)),
      );
      const until = expiresAt ? `until ${moment(Date.parse(expiresAt), at.getTime())}` : 'until revoked';
      const stillAsked = spec.runsCommands ? ' Still asked: a command the judge cannot vouch for.' : '';
      const mcp = spec.effect === 'read' ? '' : ' MCP clients still may not write without a live write capability.';
      process.stdout.write(
        `Allowed ${toolName} (${spec.plugin}, ${spec.danger}) for every caller, ${until}.${stillAsked}${mcp}\nUndo: memo permissions revoke ${toolName}\n`,
      );
    });
  permissions
    .command('deny <tool>')
    .description('deny a tool for every caller until revoked (a stored deny wins over everything, always-allow included)')
    .action(async (toolName: string) => {
      const spec = await toolSpec(cli, toolName);
      await cliRecorded(cli, { action: 'permission.deny', target: toolName, change: { plugin: spec.plugin, scope: 'forever' } }, () =>
        withStore(cli, (store) => store.set({ tool: toolName, decision: 'deny', plugin: spec.plugin, scope: 'forever' }, new Date())),
      );
      process.stdout.write(`Denied ${toolName} (${spec.plugin}) for every caller until revoked.\nUndo: memo permissions revoke ${toolName}\n`);
    });
  permissions
    .command('always-allow <state>')
    .description('the global always-allow setting: on, off, or status (never settable through a tool)')
    .action(async (state: string) => {
      if (state !== 'on' && state !== 'off' && state !== 'status') throw new UsageError('always-allow takes on, off or status');
      // An unusable file is reported by the store (on stderr) and counts as off.
      const on =
        state === 'status'
          ? await withStore(cli, (store) => store.alwaysAllow)
          : await cliRecorded(cli, { action: `always-allow.${state}` }, () =>
              withStore(cli, (store) => {
                store.setAlwaysAllow(state === 'on');
                return store.alwaysAllow;
              }),
            );
      const verb = state === 'status' ? 'is' : 'is now';
      process.stdout.write(
        on
          ? `Always allow ${verb} ON.\n${ALWAYS_ALLOW_COVERS}\nTurn it off with: memo permissions always-allow off\n`
          : `Always allow ${verb} off: medium and dangerous tools are asked unless a stored decision answers.\n`,
      );
    });
  permissions
    .command('external-writes [state]')
    .option('--client <name>', 'only for MCP clients that declare this name (clientInfo.name); without it: every external client')
    .description(
      'let external MCP clients ask for writes (on), stop it (off), or show it (status, the default); each write is then asked every time in the approvals inbox (never settable through a tool)',
    )
    .action(async (state: string | undefined, opts: { client?: string }) => {
      const s = state ?? 'status';
      if (s !== 'on' && s !== 'off' && s !== 'status') throw new UsageError('external-writes takes on, off or status');
      const client = opts.client;
      if (client !== undefined && !isClientName(client))
        throw new UsageError('--client takes a client name of 1 to 64 characters without control characters, as the client declares it');
      if (s === 'status') {
        if (client !== undefined) throw new UsageError('external-writes status shows every client; --client is for on and off');
        return void process.stdout.write(externalWritesText(await withStore(cli, (store) => store.externalWrites), 'are'));
      }
      const on = s === 'on';
      const now = await cliRecorded(cli, { action: `external-writes.${s}`, ...(client !== undefined ? { target: client } : {}) }, () =>
        withStore(cli, (store) => store.setExternalWrites(on, client)),
      );
      // Off for one name while on for every client: that client can still ask.
      const still =
        !on && client !== undefined && now.all
          ? `${JSON.stringify(client)} can still ask: external writes are on for every client (memo permissions external-writes off turns them off for all).\n`
          : '';
      process.stdout.write(still + externalWritesText(now, 'are now'));
    });
}
