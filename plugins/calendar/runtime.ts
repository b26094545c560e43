/**
 * The calendar pack's state in one kernel: its settings files, its database, and the refreshes in
 * flight. Several kernels can share this module in one process (tests, host apps), so state is
 * kept per kernel, by the pack's data folder (which the kernel hands to both `activate` and every call).
 */
import { MemoError, type PackApi, type ToolContext } from 'memo-kernel/pack';
import type { DataSource } from 'typeorm';
import type { RefreshOutcome } from './feeds.js';
import { CalendarSettings, type Source } from './sources.js';

export class CalendarRuntime {
  readonly settings: CalendarSettings;
  private db: Promise<DataSource> | null = null;
  /** One refresh per source at a time: a second caller waits for the first. */
  private readonly refreshing = new Map<string, Promise<RefreshOutcome>>();
  private readonly stopping = new AbortController();

  constructor(readonly api: PackApi) {
    this.settings = new CalendarSettings(api.dataDir, api.logger);
  }

  database(): Promise<DataSource> {
    if (this.stopping.signal.aborted) return Promise.reject(new MemoError('CANCELLED', 'The calendar pack is unloading.'));
    this.db ??= (async () => {
      // typeorm costs half a second to import: only calls that need the database pay it.
      const { ENTITIES, MIGRATIONS } = await import('./schema.js');
      return this.api.database({ name: 'calendar', entities: ENTITIES, migrations: MIGRATIONS, portable: true });
    })();
    this.db.catch(() => (this.db = null));
    return this.db;
  }

  /** How long a refresh may take before the cached copy is used instead (pack setting fetchTimeoutMs). */
  fetchTimeoutMs(config: Readonly<Record<string, unknown>> = this.api.config()): number {
    const v = config.fetchTimeoutMs;
    return typeof v === 'number' && v > 0 ? v : 8000;
  }

  /** How old a cached copy may be before a read refreshes it (pack setting refreshMinutes). */
  maxAgeMs(config: Readonly<Record<string, unknown>> = this.api.config()): number {
    const v = config.refreshMinutes;
    return (typeof v === 'number' && v >= 0 ? v : 15) * 60_000;
  }

  /** Refreshes a subscribed calendar or CalDAV account now (joining a refresh already running). */
  refresh(source: Source, timeoutMs: number, signal?: AbortSignal): Promise<RefreshOutcome> {
    const running = this.refreshing.get(source.id);
    if (running) return running;
    const work = (async (): Promise<RefreshOutcome> => {
      const db = await this.database();
      const outer = signal ? AbortSignal.any([signal, this.stopping.signal]) : this.stopping.signal;
      if (source.kind === 'subscription') {
        const { refreshFeed } = await import('./feeds.js');
        return refreshFeed(db, source, timeoutMs, outer);
      }
      if (source.kind === 'caldav') {
        const { syncAccount } = await import('./caldav.js');
        return syncAccount(db, source, this.settings, timeoutMs, outer);
      }
      return { status: 'not-modified', checkedAt: Date.now() };
    })().finally(() => this.refreshing.delete(source.id));
    this.refreshing.set(source.id, work);
    return work;
  }

  async dispose(): Promise<void> {
    this.stopping.abort(new Error('the calendar pack is unloading'));
    await Promise.allSettled([...this.refreshing.values()]);
  }
}

/** Each kernel's runtime, by the pack's data folder. */
const runtimes = new Map<string, CalendarRuntime>();

export function register(api: PackApi): CalendarRuntime {
  const rt = new CalendarRuntime(api);
  runtimes.set(api.dataDir, rt);
  return rt;
}

export function unregister(rt: CalendarRuntime): Promise<void> {
  if (runtimes.get(rt.api.dataDir) === rt) runtimes.delete(rt.api.dataDir);
  return rt.dispose();
}

export function runtimeOf(ctx: ToolContext): CalendarRuntime {
  const rt = runtimes.get(ctx.dataDir);
  if (!rt) throw new MemoError('TOOL_FAILED', 'The calendar pack is not active (its activate() has not run).');
  return rt;
}
