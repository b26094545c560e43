/**
 * Reminders that remind: the service `memo serve` (or a host's `kernel.start()`) runs. On the
 * kernel's clock it finds what is due, a reminder (reminders.create), an open task's remind_at
 * (vault_create_task / vault_update_task) or an inbox item's remind-at time
 * (inbox.convertToReminder), and delivers each once:
 *
 * - **Recorded first.** A delivery is a row of reminder_deliveries, inserted before anything is
 *   shown or sent. The row is unique per item and time, so a second instance on the same PostgreSQL
 *   database, or this one after a restart, never delivers it again: whoever's insert lands delivers.
 * - **The console.** The row is the console's notification: the console lists the rows nobody
 *   dismissed and is told of each new one as it is delivered (`vault.reminders`, subscribe), and
 *   the browser shows a system notification when its tab is in the background.
 * - **WhatsApp, when the person opted in** (settings.setReminderSettings, whatsapp: true) and a
 *   phone is linked: a message to the person's own number through the whatsapp pack's
 *   `whatsapp.self`. Never to anyone else. A send that fails is recorded as failed, not retried: a
 *   message a person gets twice is worse than one the console still shows.
 * - **Missed ones.** A reminder that fell due while Memo was stopped is delivered once when it starts
 *   again, marked late with how late. One whose delivery was cut short (the process killed between
 *   the record and the end) is marked interrupted at the next start, and not sent again.
 * - **Done first.** A reminder about a task completed before it fell due is recorded as skipped.
 *
 * The history (reminders.history) reads these rows, like a routine's runs.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { isMemoError, type ClockTimer } from 'memo-kernel/pack';
import type { VaultRuntime } from './runtime.js';
import type { ReminderDeliveryRow } from './schema.js';

/** The service looks again at least this often (reminders written by another instance, or by hand). */
export const POLL_MS = 60_000;
/** A delivery still `delivering` this long after it started was cut short (its process is gone). */
const INTERRUPTED_AFTER_MS = 5 * 60_000;
/** At most this many due reminders are delivered in one look; the rest in the next, right after. */
const BATCH = 100;

/** One delivered reminder as the console and the history show it. */
export interface ReminderNotice {
  /** The delivery's id (what the console dismisses). */
  id: string;
  source: 'reminder' | 'inbox' | 'task';
  source_id: string;
  title: string;
  /** The reminder's own text, or the inbox item's content (shortened). */
  note: string | null;
  remind_at: string;
  delivered_at: string;
  /** How late it was delivered, in minutes (Memo was not running when it fell due). */
  late_minutes: number;
  status: string;
  channels: Array<{ channel: string; outcome: string; detail?: string }>;
  seen_at: string | null;
  /** What the reminder is about, when it is about something (a task, a note, a project, an inbox item). */
  item: { type: string; id: string } | null;
}

/** The person's choices for delivery (vault_settings `reminders`). */
export interface ReminderSettings {
  /** Also a WhatsApp message to the person's own number (needs a linked phone). */
  whatsapp: boolean;
}

export const REMINDER_DEFAULTS: ReminderSettings = { whatsapp: false };

/** What the vault uses of the whatsapp pack's `whatsapp.self` (plugins/whatsapp/note-to-self.ts). */
interface WhatsAppSelf {
  unavailable(): Promise<string | null>;
  send(text: string): Promise<{ message_id: string | null }>;
}

const schema = () => import('./schema.js');

export async function reminderSettingsOf(m: EntityManager): Promise<ReminderSettings> {
  const { readSetting } = await import('./features.js');
  const stored = await readSetting(m, 'reminders');
  const out = { ...REMINDER_DEFAULTS };
  if (stored && typeof stored === 'object' && typeof (stored as Record<string, unknown>).whatsapp === 'boolean')
    out.whatsapp = (stored as { whatsapp: boolean }).whatsapp;
  return out;
}

const parseChannels = (text: string): ReminderNotice['channels'] => {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? (v as ReminderNotice['channels']) : [];
  } catch {
    return [];
  }
};

export function noticeOf(r: ReminderDeliveryRow, extra: { note: string | null; item: ReminderNotice['item'] }): ReminderNotice {
  return {
    id: r.id,
    source: r.source as ReminderNotice['source'],
    source_id: r.source_id,
    title: r.title,
    note: extra.note,
    remind_at: r.remind_at,
    delivered_at: r.delivered_at,
    late_minutes: Math.max(0, Math.floor((Date.parse(r.delivered_at) - Date.parse(r.remind_at)) / 60_000)),
    status: r.status,
    channels: parseChannels(r.channels),
    seen_at: r.seen_at,
    item: extra.item,
  };
}

interface Due {
  source: 'reminder' | 'inbox' | 'task';
  id: string;
  title: string;
  note: string | null;
  remind_at: string;
  item: ReminderNotice['item'];
}

const short = (text: string | null, max = 300): string | null => (text === null ? null : text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Everything due at `iso` and not yet delivered, oldest first. */
async function dueAt(m: EntityManager, iso: string): Promise<Due[]> {
  const { ReminderRow, InboxItemRow, TaskRow } = await schema();
  const undelivered = (source: string, alias: string) =>
    `NOT EXISTS (SELECT 1 FROM "reminder_deliveries" d WHERE d.source = '${source}' AND d.source_id = ${alias}.id AND d.remind_at = ${alias}.remind_at)`;
  const reminders = await m
    .createQueryBuilder(ReminderRow, 'r')
    .where('r.remind_at <= :iso', { iso })
    .andWhere(undelivered('reminder', 'r'))
    .orderBy('r.remind_at', 'ASC')
    .take(BATCH)
    .getMany();
  const inbox = await m
    .createQueryBuilder(InboxItemRow, 'i')
    .where('i.remind_at IS NOT NULL AND i.remind_at <= :iso AND i.archived_at IS NULL', { iso })
    .andWhere(undelivered('inbox', 'i'))
    .orderBy('i.remind_at', 'ASC')
    .take(BATCH)
    .getMany();
  // A task reminds while it is open: one completed or archived first is not reminded of.
  const tasks = await m
    .createQueryBuilder(TaskRow, 't')
    .where('t.remind_at IS NOT NULL AND t.remind_at <= :iso AND t.completed_at IS NULL AND t.archived_at IS NULL', { iso })
    .andWhere(undelivered('task', 't'))
    .orderBy('t.remind_at', 'ASC')
    .take(BATCH)
    .getMany();
  return [
    ...reminders.map((r) => ({
      source: 'reminder' as const,
      id: r.id,
      title: r.title,
      note: r.note,
      remind_at: r.remind_at,
      item: r.item_type && r.item_id ? { type: r.item_type, id: r.item_id } : null,
    })),
    ...inbox.map((i) => ({
      source: 'inbox' as const,
      id: i.id,
      title: i.title,
      note: short(i.content),
      remind_at: i.remind_at!,
      item: { type: 'inbox', id: i.id },
    })),
    ...tasks.map((t) => ({
      source: 'task' as const,
      id: t.id,
      title: t.title,
      note: short(t.description),
      remind_at: t.remind_at!,
      item: { type: 'task', id: t.id },
    })),
  ].sort((a, b) => a.remind_at.localeCompare(b.remind_at));
}

/** The next time something falls due after `iso` (null: nothing is waiting). */
async function nextAfter(m: EntityManager, iso: string): Promise<string | null> {
  const { ReminderRow, InboxItemRow, TaskRow } = await schema();
  const r = await m.createQueryBuilder(ReminderRow, 'r').select('MIN(r.remind_at)', 't').where('r.remind_at > :iso', { iso }).getRawOne<{ t: string | null }>();
  const i = await m
    .createQueryBuilder(InboxItemRow, 'i')
    .select('MIN(i.remind_at)', 't')
    .where('i.remind_at IS NOT NULL AND i.remind_at > :iso AND i.archived_at IS NULL', { iso })
    .getRawOne<{ t: string | null }>();
  const t = await m
    .createQueryBuilder(TaskRow, 't')
    .select('MIN(t.remind_at)', 't')
    .where('t.remind_at IS NOT NULL AND t.remind_at > :iso AND t.completed_at IS NULL AND t.archived_at IS NULL', { iso })
    .getRawOne<{ t: string | null }>();
  const times = [r?.t, i?.t, t?.t].filter((t): t is string => typeof t === 'string').sort();
  return times[0] ?? null;
}

/** SQLite's and PostgreSQL's unique-violation errors (a twin insert: someone delivered it first). */
function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; driverError?: { code?: string }; message?: string };
  const code = e?.driverError?.code ?? e?.code;
  return (
    code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || /UNIQUE constraint failed/.test(e?.message ?? '')
  );
}

export class ReminderDelivery {
  private timer: ClockTimer | null = null;
  private running = false;
  private ticking: Promise<void> | null = null;
  private again = false;
  private readonly listeners = new Set<(n: ReminderNotice) => void>();

  constructor(private readonly rt: VaultRuntime) {}

  private get clock() {
    return this.rt.api.clock;
  }

  /** Called with each reminder as it is delivered (the console's stream). */
  subscribe(listener: (n: ReminderNotice) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(): void {
    this.running = true;
    this.poke();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.idle();
  }

  /** Looks now (at start, and when a reminder was written in this process); after the look under way when there is one. */
  poke(): void {
    if (!this.running) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = null;
    this.ticking = this.look().finally(() => {
      this.ticking = null;
      if (this.again) {
        this.again = false;
        this.poke();
      }
    });
  }

  /** Resolves once no look is under way (tests, and a host waiting for a delivery). */
  async idle(): Promise<void> {
    while (this.ticking) await this.ticking.catch(() => undefined);
  }

  /** The next look, `ms` from now on the kernel's clock. */
  private schedule(ms: number): void {
    if (!this.running) return;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      this.poke();
    }, ms);
  }

  /** One look: recover cut-short deliveries, deliver what is due, then sleep until the next one (or POLL_MS). */
  private async look(): Promise<void> {
    const started = this.clock.now();
    let wait = POLL_MS;
    try {
      if (this.rt.planningInUse()) {
        const ds = await this.rt.planningDatabase();
        await this.recover(ds);
        const now = started;
        const iso = new Date(now).toISOString();
        const due = await dueAt(ds.manager, iso);
        for (const d of due) {
          if (!this.running) return;
          await this.deliver(ds, d, now);
        }
        if (due.length >= BATCH) {
          // More are due than one look takes: the next look follows this one at once.
          this.again = true;
          return;
        }
        const next = await nextAfter(ds.manager, iso);
        if (next !== null) wait = Math.min(POLL_MS, Math.max(0, Date.parse(next) - now));
      }
    } catch (err) {
      this.rt.api.logger.warn(`vault: reminders could not be looked at (${(err as Error).message}); trying again in ${POLL_MS / 1000} s`);
    }
    // From the time this look read, not from now: the clock may have moved while it ran.
    // At most `wait`: a clock set back while the look ran must not push the next look further away.
    const left = Math.min(wait, started + wait - this.clock.now());
    if (left <= 0) this.again = true;
    else this.schedule(left);
  }

  /** Deliveries left `delivering` by a process that stopped part way: marked interrupted, never sent again. */
  private async recover(ds: DataSource): Promise<void> {
    const before = new Date(this.clock.now() - INTERRUPTED_AFTER_MS).toISOString();
    const { ReminderDeliveryRow } = await schema();
    await ds
      .createQueryBuilder()
      .update(ReminderDeliveryRow)
      .set({ status: 'interrupted' })
      .where("status = 'delivering' AND delivered_at < :before", { before })
      .execute();
  }

  private async deliver(ds: DataSource, d: Due, now: number): Promise<void> {
    const { ReminderDeliveryRow, TaskRow } = await schema();
    const { newId } = await import('./planning-store.js');
    const row: ReminderDeliveryRow = Object.assign(new ReminderDeliveryRow(), {
      id: newId(),
      source: d.source,
      source_id: d.id,
      remind_at: d.remind_at,
      title: d.title.slice(0, 500),
      status: 'delivering',
      channels: '[]',
      delivered_at: new Date(now).toISOString(),
      seen_at: null,
      instance: this.rt.api.instanceId.slice(0, 200),
    });
    try {
      await ds.manager.insert(ReminderDeliveryRow, row);
    } catch (err) {
      if (isUniqueViolation(err)) return; // another instance (or a look racing this one) took it
      throw err;
    }
    const channels: ReminderNotice['channels'] = [];
    let status = 'delivered';
    try {
      // Read again after the record: a task done (or archived) since the look is not reminded of.
      const done = d.item?.type === 'task' ? await ds.manager.findOneBy(TaskRow, { id: d.item.id }) : null;
      if (done && (done.completed_at !== null || done.archived_at !== null || (d.source === 'task' && done.remind_at !== d.remind_at))) {
        status = 'skipped';
        channels.push({
          channel: 'console',
          outcome: 'skipped',
          detail: done.remind_at !== d.remind_at && d.source === 'task' ? 'the task was given another time' : 'the task was done before the reminder fell due',
        });
      } else {
        channels.push({ channel: 'console', outcome: 'shown' });
        const whatsapp = await this.toWhatsApp(ds, d, now);
        if (whatsapp) {
          channels.push(whatsapp);
          if (whatsapp.outcome === 'failed') status = 'partly';
        }
      }
    } catch (err) {
      // Recorded all the same: the console shows it; what could not be looked at is said.
      if (!channels.length) channels.push({ channel: 'console', outcome: 'shown' });
      channels.push({ channel: 'delivery', outcome: 'failed', detail: `could not be finished: ${(err as Error).message}` });
      status = 'partly';
    }
    row.status = status;
    row.channels = JSON.stringify(channels);
    if (status === 'skipped') row.seen_at = row.delivered_at;
    await ds.manager.update(ReminderDeliveryRow, { id: row.id }, { status: row.status, channels: row.channels, seen_at: row.seen_at });
    if (status === 'skipped') return;
    const notice = noticeOf(row, { note: d.note, item: d.item });
    for (const l of this.listeners) {
      try {
        l(notice);
      } catch (err) {
        this.rt.api.logger.warn(`vault: a reminder listener failed (${(err as Error).message})`);
      }
    }
  }

  /** The WhatsApp channel's outcome, or null when the person has not opted in. */
  private async toWhatsApp(ds: DataSource, d: Due, now: number): Promise<ReminderNotice['channels'][number] | null> {
    if (!(await reminderSettingsOf(ds.manager)).whatsapp) return null;
    const self = this.rt.api.lookup<WhatsAppSelf>('whatsapp.self');
    if (!self) return { channel: 'whatsapp', outcome: 'failed', detail: 'the whatsapp pack is not loaded' };
    const why = await self.unavailable();
    if (why) return { channel: 'whatsapp', outcome: 'failed', detail: why };
    const late = Math.floor((now - Date.parse(d.remind_at)) / 60_000);
    const text = [
      `⏰ Reminder: ${d.title}`,
      ...(d.note ? [d.note] : []),
      ...(late >= 5 ? [`(due ${d.remind_at.slice(0, 16).replace('T', ' ')} UTC; Memo was not running then)`] : []),
    ].join('\n');
    try {
      const sent = await self.send(text);
      return { channel: 'whatsapp', outcome: 'sent', ...(sent.message_id ? { detail: `message ${sent.message_id}` } : {}) };
    } catch (err) {
      return { channel: 'whatsapp', outcome: 'failed', detail: isMemoError(err) ? err.message : 'the message could not be sent' };
    }
  }
}

/** The deliveries newest first, with each reminder's text and item as they are now (the history; the console's list). */
export async function deliveries(m: EntityManager, o: { unseenOnly?: boolean; limit: number }): Promise<ReminderNotice[]> {
  const { ReminderDeliveryRow, ReminderRow, InboxItemRow, TaskRow } = await schema();
  const q = m.createQueryBuilder(ReminderDeliveryRow, 'd').orderBy('d.delivered_at', 'DESC').addOrderBy('d.id', 'ASC').take(o.limit);
  if (o.unseenOnly) q.where("d.seen_at IS NULL AND d.status <> 'skipped'");
  const rows = await q.getMany();
  // Each source's rows as they are now, by id (the reminder's text, the item's content or description).
  const byId = async <T extends { id: string }>(entity: new () => T, source: string): Promise<Map<string, T>> => {
    const ids = [...new Set(rows.filter((r) => r.source === source).map((r) => r.source_id))];
    const found = ids.length ? await m.findBy(entity, ids.map((id) => ({ id })) as never) : [];
    return new Map(found.map((r) => [r.id, r]));
  };
  const reminders = await byId(ReminderRow, 'reminder');
  const items = await byId(InboxItemRow, 'inbox');
  const tasks = await byId(TaskRow, 'task');
  return rows.map((r) => {
    if (r.source === 'inbox') return noticeOf(r, { note: short(items.get(r.source_id)?.content ?? null), item: { type: 'inbox', id: r.source_id } });
    if (r.source === 'task') return noticeOf(r, { note: short(tasks.get(r.source_id)?.description ?? null), item: { type: 'task', id: r.source_id } });
    const rem = reminders.get(r.source_id);
    return noticeOf(r, { note: rem?.note ?? null, item: rem?.item_type && rem.item_id ? { type: rem.item_type, id: rem.item_id } : null });
  });
}

/** What the vault offers the web console under `vault.reminders`. */
export interface VaultReminders {
  /** Each reminder as it is delivered in this process. */
  subscribe(listener: (n: ReminderNotice) => void): () => void;
  /** The delivered reminders nobody dismissed yet, newest first (empty without planning data). */
  unseen(limit?: number): Promise<ReminderNotice[]>;
  /** Dismisses one in the console: false when there is no such delivery or it was dismissed already. */
  dismiss(id: string): Promise<boolean>;
  /** Resolves once no look is under way (a host or a test waiting for a delivery to finish). */
  idle(): Promise<void>;
}

export function vaultReminders(rt: VaultRuntime, delivery: ReminderDelivery): VaultReminders {
  return {
    subscribe: (listener) => delivery.subscribe(listener),
    idle: () => delivery.idle(),
    async unseen(limit = 50) {
      if (!rt.planningInUse()) return [];
      return deliveries((await rt.planningDatabase()).manager, { unseenOnly: true, limit: Math.max(1, Math.min(limit, 200)) });
    },
    async dismiss(id) {
      if (!rt.planningInUse()) return false;
      const { ReminderDeliveryRow } = await schema();
      const r = await (
        await rt.planningDatabase()
      )
        .createQueryBuilder()
        .update(ReminderDeliveryRow)
        .set({ seen_at: new Date(rt.api.clock.now()).toISOString() })
        .where('id = :id AND seen_at IS NULL', { id })
        .execute();
      return (r.affected ?? 0) > 0;
    },
  };
}
