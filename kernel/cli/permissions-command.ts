/**
 * `memo permissions list|revoke|always-allow`: the stored decisions (forever, until a moment, for one
 * conversation) and the person's global always-allow setting, all in `data/permissions.json`. The
 * file is the data folder's, out of every tool's reach: only this command and host apps change it
 * (a running kernel re-reads it at its next call).
 */
import * as path from 'node:path';
import type { Command } from 'commander';
import { StderrLogger } from '../logger.js';
import { PermissionStore, type StoredDecision } from '../permissions/permission-store.js';
import { print, table, UsageError, type Cli } from './context.js';
import { moment } from './moments.js';

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

function storeOf(cli: Cli): PermissionStore {
  return new PermissionStore(path.join(cli.dataDir(), 'permissions.json'), new StderrLogger());
}

export function registerPermissionsCommands(program: Command, cli: Cli): void {
  const permissions = program
    .command('permissions')
    .description('stored permission decisions (forever, timed, per conversation) and the global always-allow setting');
  permissions
    .command('list')
    .option('--json', 'print JSON: the decisions in force, each with its scope (and expiresAt or conversationId)')
    .description('list the stored decisions in force (expired ones left out)')
    .action((opts: { json?: boolean }) => {
      const store = storeOf(cli);
      const now = Date.now();
      const list = store.list(now);
      if (opts.json) return print(list);
      if (store.alwaysAllow) process.stdout.write('Always allow is ON for agent turns and routines (memo permissions always-allow status).\n');
      process.stdout.write(decisionTable(list, now));
    });
  permissions
    .command('revoke <tool>')
    .description("remove a tool's stored decisions, every scope (it will be asked again)")
    .action((toolName: string) => {
      const store = storeOf(cli);
      const now = Date.now();
      const had = store.list().filter((d) => d.tool === toolName);
      if (store.revoke(toolName)) {
        const what = had.map((d) => `${d.decision} ${scopeText(d, now)}`).join('; ');
        process.stdout.write(`Revoked the stored decision${had.length > 1 ? 's' : ''} for ${toolName} (${what}).\n`);
      } else {
        process.stderr.write(`memo: there is no stored decision for ${toolName}.\n`);
        cli.setExit(1);
      }
    });
  permissions
    .command('always-allow <state>')
    .description('the global always-allow setting: on, off, or status (never settable through a tool)')
    .action((state: string) => {
      if (state !== 'on' && state !== 'off' && state !== 'status') throw new UsageError('always-allow takes on, off or status');
      const store = storeOf(cli);
      if (state !== 'status') store.setAlwaysAllow(state === 'on');
      // An unusable file is reported by the store (on stderr) and counts as off.
      const on = store.alwaysAllow;
      const verb = state === 'status' ? 'is' : 'is now';
      process.stdout.write(
        on
          ? `Always allow ${verb} ON.\n${ALWAYS_ALLOW_COVERS}\nTurn it off with: memo permissions always-allow off\n`
          : `Always allow ${verb} off: medium and dangerous tools are asked unless a stored decision answers.\n`,
      );
    });
}
