/**
 * Lines the PostgreSQL audit trail (pg-audit-log.ts) could not write: the record PgAuditLog keeps of
 * them until a chained `lines-lost` gap event naming them is committed, in memory and in a file of
 * its own in the data folder (`audit-lost.<pid>-<n>.json`), the records of earlier runs taken over at
 * start, and that event's fields. Also the shape of a line waiting to be sealed (Draft).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AuditEvent, AuditRecord } from './audit-record.js';

/** A line to seal: its fields after `seq` (and the instance), before `prev`. */
export type EventFields = Record<string, unknown> & { event: AuditEvent['event'] };
export type Draft = { kind: 'entry'; record: AuditRecord } | { kind: 'event'; fields: EventFields };

/**
 * Lines that could not be written (the database was down, hung or refused them), kept until a
 * chained `lines-lost` gap event naming them is committed: calls by id and tool (never their
 * arguments), at most MAX_LOST_LISTED of them, then counted. Kept in memory and in a file of this
 * process's own in the data folder (lostFileName), so a kernel stopped or killed before the database
 * came back has them named by the next start of the instance (adoptLost).
 */
export interface Lost {
  /** Lines this process itself lost (the rest were read back from the records of earlier runs). */
  mine: number;
  /** Earlier runs of this instance whose records were read back at start: their pids. */
  earlier: number[];
  /** Records of earlier runs that could not be read: which, and why (how many lines they held is not known). */
  unreadable: string[];
  count: number;
  calls: Array<{ id: string; tool: string; outcome: 'ok' | 'error' }>;
  /** Kernel events (not calls) among them, by kind. */
  events: number;
  /** When the first and the last of them were lost (this clock). */
  from: string;
  to: string;
  /** Lines whose statement timed out: a hung server may still have committed them when it woke up. */
  unconfirmed: number;
}

const emptyLost = (now: string): Lost => ({ mine: 0, earlier: [], unreadable: [], count: 0, calls: [], events: 0, from: now, to: now, unconfirmed: 0 });

/** A batch whose statement got no answer (a hung server may have committed it): its last hash, its calls, how many lines. */
export interface Unconfirmed {
  hash: string;
  calls: Set<string>;
  lines: number;
}

/**
 * The lost-lines record of one PgAuditLog: `audit-lost.<pid>-<n>.json` (n counts the logs this process
 * opened), `.claim-<k>` added while it takes over the record of a run that ended. Each process writes
 * and removes only its own files, so a CLI call beside `memo serve` never overwrites serve's record.
 */
const LOST_NAME = /^audit-lost\.(\d+)-(\d+)(?:\.claim-\d+)?\.json(\.tmp)?$/;
const lostFileName = (pid: number, n: number, claim?: number) => `audit-lost.${pid}-${n}${claim === undefined ? '' : `.claim-${claim}`}.json`;
/** Lost-lines files of the logs open in this process (by owner `<pid>-<n>`): never taken over. */
const lostOwnersOpen = new Set<string>();
let lostLogs = 0;

/** Whether the process that owns a lost-lines file still runs (its own logs: whether that log is open). */
function ownerRuns(pid: number, owner: string): boolean {
  if (pid === process.pid) return lostOwnersOpen.has(owner);
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** How many lost calls a `lines-lost` gap event names one by one; the rest are counted. */
const MAX_LOST_LISTED = 100;

/** The lost-lines record of one PgAuditLog: its lost lines in memory, and its own file that keeps them (lostFile). */
export class PgLostRecord {
  /** Lines lost since the last `lines-lost` event was committed (also in `lostFile`, see saveLost). */
  lost: Lost | null = null;
  /** This log's own lost-lines file (lostFileName); `lostOwner` is its `<pid>-<n>`. */
  readonly lostFile: string;
  private readonly lostOwner: string;
  /**
   * The last batch whose statement timed out (a hung server may commit it when it wakes up): its
   * last hash and how many call lines it held. Found as the chain's last row later, it was written
   * after all and is taken off `lost`.
   */
  unconfirmed: Unconfirmed | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly instance: string,
  ) {
    const n = ++lostLogs;
    this.lostOwner = `${process.pid}-${n}`;
    this.lostFile = path.join(dataDir, lostFileName(process.pid, n));
  }

  /** The log is open: its own record is never taken over meanwhile, and those of runs that ended are (adoptLost). */
  opened(): void {
    lostOwnersOpen.add(this.lostOwner);
    this.adoptLost();
  }

  /** The log stopped: its record may be taken over from now on (adoptLost). */
  closed(): void {
    lostOwnersOpen.delete(this.lostOwner);
  }

  /** Lines that could not be written are remembered (in memory and `lostFile`) for the `lines-lost` event written once the database is usable again. */
  noteLost(drafts: readonly Draft[], err: unknown): void {
    if (drafts.length === 0) return;
    const now = new Date().toISOString();
    const lost = (this.lost ??= emptyLost(now));
    lost.mine += drafts.length;
    const calls = new Set<string>();
    for (const d of drafts) {
      lost.count++;
      if (d.kind === 'entry') {
        calls.add(d.record.id);
        if (lost.calls.length < MAX_LOST_LISTED) lost.calls.push({ id: d.record.id, tool: d.record.tool, outcome: d.record.outcome });
      } else lost.events++;
    }
    lost.to = now;
    const sealedHash = (err as { sealedHash?: unknown } | null)?.sealedHash;
    if (typeof sealedHash === 'string') {
      lost.unconfirmed += drafts.length;
      this.unconfirmed = { hash: sealedHash, calls, lines: drafts.length };
    }
    this.saveLost();
  }

  /**
   * Writes `lost` (and the batch that may have been committed after all) to this log's own file, or
   * removes it once nothing is lost: replaced whole by a rename, so a crash leaves the old record or
   * the new. Not fsynced, like the trail's own lines. Should it fail (no room), the record stays in memory.
   */
  saveLost(): boolean {
    try {
      if (!this.lost) {
        fs.rmSync(this.lostFile, { force: true });
        return true;
      }
      const u = this.unconfirmed;
      const text = JSON.stringify({
        version: 1,
        instance: this.instance,
        lost: this.lost,
        ...(u ? { unconfirmed: { hash: u.hash, calls: [...u.calls], lines: u.lines } } : {}),
      });
      fs.writeFileSync(`${this.lostFile}.tmp`, text, { mode: 0o600 });
      fs.renameSync(`${this.lostFile}.tmp`, this.lostFile);
      return true;
    } catch {
      // Kept in memory: the event is still written if this process lives until the database answers.
      return false;
    }
  }

  /**
   * Takes over the lost-lines records of runs of this instance that ended (their process is gone, or
   * their log in this process was closed): each is claimed by a rename (of two starts, one gets it),
   * added to this log's record, which is saved, and only then removed. A record that cannot be read is
   * named in the event rather than dropped. Records of another instance id are left to it.
   */
  private adoptLost(): void {
    let names: string[];
    try {
      names = fs.readdirSync(this.dataDir);
    } catch {
      return;
    }
    let claims = 0;
    for (const name of names) {
      const m = LOST_NAME.exec(name);
      if (!m) continue;
      const pid = Number(m[1]);
      if (ownerRuns(pid, `${m[1]}-${m[2]}`)) continue;
      const file = path.join(this.dataDir, name);
      if (m[3]) {
        // A write cut short by a crash: the record it was replacing is still there.
        fs.rmSync(file, { force: true });
        continue;
      }
      const claimed = path.join(this.dataDir, lostFileName(process.pid, Number(this.lostOwner.split('-')[1]), ++claims));
      try {
        fs.renameSync(file, claimed);
      } catch {
        continue; // another start took it
      }
      let text = '';
      try {
        text = fs.readFileSync(claimed, 'utf8');
      } catch {
        // named as unreadable below
      }
      const read = parseLostFile(text, pid);
      if ('instance' in read && read.instance !== this.instance) {
        // Another instance's chain (MEMO_INSTANCE_ID differs): given back under its own name.
        fs.renameSync(claimed, file);
        continue;
      }
      this.merge(name, read);
      // Removed once its lines are in this log's own record (kept, should that not be written).
      if (this.saveLost()) fs.rmSync(claimed, { force: true });
    }
  }

  /** Adds an earlier run's record (or the reason it cannot be read) to this log's. */
  private merge(name: string, read: ReturnType<typeof parseLostFile>): void {
    const lost = (this.lost ??= emptyLost(new Date().toISOString()));
    if (!('lost' in read)) {
      lost.unreadable.push(`${name}: ${read.why}`);
      return;
    }
    const r = read.lost;
    const fresh = lost.count === 0;
    for (const pid of [...r.earlier, ...(r.mine > 0 ? [read.pid] : [])]) if (!lost.earlier.includes(pid)) lost.earlier.push(pid);
    lost.unreadable.push(...r.unreadable);
    lost.count += r.count;
    lost.events += r.events;
    lost.unconfirmed += r.unconfirmed;
    lost.calls.push(...r.calls.slice(0, Math.max(0, MAX_LOST_LISTED - lost.calls.length)));
    if (fresh || r.from < lost.from) lost.from = r.from;
    if (fresh || r.to > lost.to) lost.to = r.to;
    if (!this.unconfirmed && read.unconfirmed) this.unconfirmed = read.unconfirmed;
  }

  /** The batch whose statement timed out was committed after all (found as the chain's last row): its lines are not lost. */
  confirmed(batch: { calls: Set<string>; lines: number }): void {
    this.unconfirmed = null;
    const lost = this.lost;
    if (!lost) return;
    lost.count -= batch.lines;
    lost.unconfirmed = Math.max(0, lost.unconfirmed - batch.lines);
    lost.calls = lost.calls.filter((c) => !batch.calls.has(c.id));
    if (lost.count <= 0 && lost.unreadable.length === 0) this.lost = null;
    this.saveLost();
  }
}

/**
 * The chained `gap` event (seen `lines-lost`) for lines that could not be written: how many, the
 * calls by id and tool (never their arguments; at most MAX_LOST_LISTED), and when.
 */
export function lostEvent(lost: Lost): EventFields {
  const calls = lost.count - lost.events;
  const runs = lost.earlier.length === 1 ? 'an earlier run' : 'earlier runs';
  const earlier = lost.earlier.length ? ` (${lost.mine ? 'some ' : ''}by ${runs} of this instance, pid ${lost.earlier.join(', ')})` : '';
  const unreadable = lost.unreadable.length
    ? `${lost.count ? '; also, ' : ''}the record of lines an earlier run of this instance could not write could not be read (${lost.unreadable.join('; ')}): how many are missing is not known`
    : '';
  const what = [calls ? `${calls} call line${calls === 1 ? '' : 's'}` : '', lost.events ? `${lost.events} kernel event${lost.events === 1 ? '' : 's'}` : '']
    .filter(Boolean)
    .join(' and ');
  const unconfirmed = lost.unconfirmed
    ? ` (${lost.unconfirmed} of them sent in a statement that got no answer: the server may have committed ${lost.unconfirmed === 1 ? 'it' : 'them'} before this event)`
    : '';
  return {
    event: 'gap',
    pid: process.pid,
    seen: 'lines-lost',
    lost: {
      lines: lost.count,
      calls: lost.calls,
      ...(calls > lost.calls.length ? { unlisted: calls - lost.calls.length } : {}),
      ...(lost.events ? { events: lost.events } : {}),
      ...(lost.unconfirmed ? { unconfirmed: lost.unconfirmed } : {}),
      from: lost.from,
      to: lost.to,
      ...(lost.earlier.length ? { earlier: lost.earlier } : {}),
      ...(lost.unreadable.length ? { unreadable: true } : {}),
    },
    detail: lost.count
      ? `${what} could not be written between ${lost.from} and ${lost.to}${earlier} (the database could not be used)${unconfirmed}${unreadable}`
      : unreadable.replace(/^t/, 'T'),
  };
}

/** A lost-lines file's text, checked field by field: the record (with the instance and pid that wrote it), or why it cannot be used. */
function parseLostFile(text: string, pid: number): { instance: string; pid: number; lost: Lost; unconfirmed?: Unconfirmed } | { why: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { why: text ? 'it is not JSON' : 'it cannot be read' };
  }
  const o = v as { version?: unknown; instance?: unknown; lost?: Record<string, unknown>; unconfirmed?: Record<string, unknown> };
  const l = o?.lost;
  const count = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
  const call = (c: unknown) => {
    const r = c as Record<string, unknown> | null;
    return typeof r?.id === 'string' && typeof r.tool === 'string' && (r.outcome === 'ok' || r.outcome === 'error');
  };
  if (
    o?.version !== 1 ||
    typeof o.instance !== 'string' ||
    !l ||
    !count(l.mine) ||
    !Array.isArray(l.earlier) ||
    !l.earlier.every(count) ||
    !Array.isArray(l.unreadable) ||
    !l.unreadable.every((u) => typeof u === 'string') ||
    !count(l.count) ||
    !count(l.events) ||
    !count(l.unconfirmed) ||
    typeof l.from !== 'string' ||
    typeof l.to !== 'string' ||
    !Array.isArray(l.calls) ||
    !l.calls.every(call)
  )
    return { why: 'it is not a record of lost lines' };
  const lost: Lost = {
    mine: l.mine,
    earlier: l.earlier,
    unreadable: l.unreadable,
    count: l.count,
    calls: (l.calls as Lost['calls']).slice(0, MAX_LOST_LISTED).map((c) => ({ id: c.id, tool: c.tool, outcome: c.outcome })),
    events: l.events,
    from: l.from,
    to: l.to,
    unconfirmed: l.unconfirmed,
  };
  const u = o.unconfirmed;
  const unconfirmed =
    u && typeof u.hash === 'string' && count(u.lines) && Array.isArray(u.calls) && u.calls.every((c) => typeof c === 'string')
      ? { hash: u.hash, calls: new Set(u.calls), lines: u.lines }
      : undefined;
  return { instance: o.instance, pid, lost, ...(unconfirmed ? { unconfirmed } : {}) };
}
