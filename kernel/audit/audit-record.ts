/**
 * What the audit trail holds, on a file (audit-log.ts) or on PostgreSQL (pg-audit-log.ts): a call's
 * record and the entry it becomes, the kernel's own events about the log, a person's admin record,
 * and the words for a line the OS would not write.
 */
import type { LostLines } from './audit-verify.js';

/** One line of `agent-audit.jsonl`. Arguments are masked before they get here. */
export interface AuditRecord {
  ts: string;
  id: string;
  /** Who called: a caller kind of the tool contract (`agent`, `mcp`, `cli`, `routine`, `host`), its id and conversation. */
  caller: { kind: string; id?: string; conversationId?: string; token?: string };
  tool: string;
  pack: string | null;
  args: unknown;
  /** How the permission question was settled: `auto`, `allow:once`, `deny:forever`, `deny:timeout`, `none`, ... */
  decision: string;
  /** Who allowed the call when a person was asked (a face's name: `terminal`, `cli`, `host`, ...). */
  answeredBy?: string;
  /** Who edited the arguments before approving (a face's name); `args` are then the edited ones. */
  editedBy?: string;
  /** With `editedBy`: the arguments the caller asked for, masked, before the person's edit. */
  askedArgs?: unknown;
  outcome: 'ok' | 'error';
  error?: { code: string; message: string };
  summary: string;
  durationMs: number;
}

export interface AuditEntry extends AuditRecord {
  seq: number;
  /** On PostgreSQL: the instance whose chain the entry belongs to (storage/instance-id.ts). */
  instance?: string;
  /** Hash of the previous line: removing, inserting or editing a line breaks the chain. */
  prev: string;
  /** HMAC-SHA256 of `prev + "\n" + this line without its hash`, keyed with the data folder's `audit.key`. */
  hash: string;
}

/** What a running kernel saw when its file did not continue the way it left it. */
export type GapSeen = 'cut-tail' | 'emptied' | 'deleted' | 'replaced' | 'head-missing' | 'head-altered' | 'foreign-line' | 'lines-lost';

/**
 * A line the kernel writes about the log itself, chained and MACed like any entry (it takes the
 * next entry number):
 * - `gap`: the file was cut, emptied, deleted or replaced (or the head was), seen by this process;
 * - `keyed-chain-start`: the first keyed line after lines written before the keyed chain existed;
 * - `torn-tail-recovered`: the line before was torn by a crash mid-write;
 * - `agent-access`: an agent turn handed to an agent CLI (`note()`): which CLI, and whether it ran
 *   in Vault only (every tool call through this kernel) or with Computer access (its own file,
 *   shell and web tools too, which this trail does not see).
 * Any of them carries `torn: true` when it follows a torn line.
 */
export interface AuditEvent {
  seq: number;
  ts: string;
  event: 'gap' | 'keyed-chain-start' | 'torn-tail-recovered' | 'agent-access' | 'admin';
  pid: number;
  /** On PostgreSQL: the instance whose chain the event belongs to. */
  instance?: string;
  /** agent-access: the turn's conversation, the CLI and its version, and the access it had. */
  conversationId?: string;
  backend?: string;
  version?: string;
  access?: 'vault' | 'computer';
  seen?: GapSeen;
  /** Entry numbers the file no longer has, when they are known. */
  missing?: { from: number; to: number };
  /** The last entry this process (or the head) knew of before it looked. */
  known?: { seq: number; hash: string };
  detail?: string;
  /** keyed-chain-start: how many unkeyed entries come before it. */
  legacyEntries?: number;
  /** The previous line is a torn fragment that this event closes. */
  torn?: true;
  /** gap: where the kernel saved the content it still held of a deleted file (beside the log). */
  recoveredTo?: string;
  /** gap `lines-lost`: the lines this process could not write (calls by id and tool, never their arguments). */
  lost?: LostLines;
  /** admin: what was done (`pack.disable`, `permission.allow`, ...), by which face, to what, and how. */
  action?: string;
  by?: string;
  target?: string;
  change?: Record<string, unknown>;
  outcome?: 'failed';
  error?: string;
  prev: string;
  hash: string;
}

export type AuditLine = AuditEntry | AuditEvent;

/**
 * A person's change to what the kernel may do, for the trail (`AuditLog.admin`, `PgAuditLog.admin`):
 * `action` names it (`pack.disable`, `permission.allow`, `provider.add`, `token.rotate`, ...), `by`
 * the face it came through (`cli`, `console`, `host`), `target` what it changed (a pack, a tool, a
 * provider), `change` how: masked by the caller before it gets here, as a call's arguments are
 * (Kernel.recordAdmin masks values under secret-looking names and secret-shaped values).
 */
export interface AdminRecord {
  action: string;
  by: string;
  target?: string;
  change?: Record<string, unknown>;
  /** On a second line for the same change: it failed after its first line was written, and why. */
  outcome?: 'failed';
  error?: string;
}

/** An admin record as its line carries it: bounded. */
export function adminFields(record: AdminRecord): Omit<AuditEvent, 'seq' | 'ts' | 'pid' | 'prev' | 'hash'> {
  const change = record.change;
  const text = change ? JSON.stringify(change) : '';
  return {
    event: 'admin',
    action: String(record.action).slice(0, 100),
    by: String(record.by).slice(0, 100),
    ...(record.target !== undefined ? { target: String(record.target).slice(0, 200) } : {}),
    ...(change ? { change: text.length > 4000 ? { truncated: `${text.slice(0, 4000)}…` } : change } : {}),
    ...(record.outcome ? { outcome: record.outcome } : {}),
    ...(record.error !== undefined ? { error: String(record.error).slice(0, 500) } : {}),
  };
}

/** What the OS said when a line could not be written, in words a person reads. */
export function writeFailureCause(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  switch (code) {
    case 'ENOSPC':
      return 'the disk is full (ENOSPC)';
    case 'EDQUOT':
      return 'the disk quota is used up (EDQUOT)';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code})`;
    case 'EROFS':
      return 'the file system is read-only (EROFS)';
    case 'EIO':
      return 'an input/output error (EIO)';
    case 'EFBIG':
      return 'the file is too large (EFBIG)';
    default:
      return (err as Error)?.message ?? String(err);
  }
}

export function isAuditEvent(line: AuditLine): line is AuditEvent {
  return typeof (line as AuditEvent).event === 'string';
}

export interface AuditFilter {
  limit?: number;
  tool?: string;
}
