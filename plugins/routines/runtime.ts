/**
 * The routines pack's state in one kernel: its database and its scheduler. Several kernels can
 * share this module in one process (tests, host apps), so state is kept per kernel, by the pack's
 * data folder (which the kernel hands to both `activate` and every call).
 */
import { MemoError, type PackApi, type ToolContext } from 'memo-kernel/pack';
import type { DataSource } from 'typeorm';
import { Scheduler } from './scheduler.js';
import type { RoutineStore } from './store.js';

export class RoutinesRuntime {
  private db: Promise<{ ds: DataSource; Store: typeof RoutineStore }> | null = null;
  private closed = false;
  readonly scheduler: Scheduler;

  constructor(readonly api: PackApi) {
    this.scheduler = new Scheduler(this);
  }

  /**
   * The store over the pack's database (opened and migrated on first use). The entity classes and
   * the store, and with them TypeORM, are imported here, not when the pack loads: a kernel start
   * that never touches a routine does not pay for them.
   */
  async store(): Promise<RoutineStore> {
    if (this.closed) throw new MemoError('CANCELLED', 'The routines pack is unloading.');
    this.db ??= (async () => {
      // One after the other: both import TypeORM, and jest's ESM loader fails a module two imports ask for at once.
      const { ENTITIES, MIGRATIONS } = await import('./schema.js');
      const { RoutineStore: Store } = await import('./store.js');
      const ds = await this.api.database({ name: 'routines', entities: ENTITIES, migrations: MIGRATIONS, portable: true });
      return { ds, Store };
    })();
    this.db.catch(() => (this.db = null));
    const { ds, Store } = await this.db;
    return new Store(ds);
  }

  now(): number {
    return this.api.clock.now();
  }

  async dispose(): Promise<void> {
    await this.scheduler.stop();
    this.closed = true;
  }
}

const runtimes = new Map<string, RoutinesRuntime>();

export function register(api: PackApi): RoutinesRuntime {
  const rt = new RoutinesRuntime(api);
  runtimes.set(api.dataDir, rt);
  return rt;
}

export function unregister(rt: RoutinesRuntime): Promise<void> {
  if (runtimes.get(rt.api.dataDir) === rt) runtimes.delete(rt.api.dataDir);
  return rt.dispose();
}

export function runtimeOf(ctx: ToolContext): RoutinesRuntime {
  const rt = runtimes.get(ctx.dataDir);
  if (!rt) throw new MemoError('TOOL_FAILED', 'The routines pack is not active (its activate() has not run).');
  return rt;
}
