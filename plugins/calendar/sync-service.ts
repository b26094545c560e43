/**
 * The background refresh `memo serve` (or a host's `kernel.start()`) runs: every added subscription
 * and CalDAV account is refreshed once at start and then every `refreshMinutes` (at least one), so
 * reads find a fresh copy and offline reads a recent one. Failures are logged, never fatal.
 */
import type { PackApi } from 'memo-kernel/pack';
import type { CalendarRuntime } from './runtime.js';

type PackService = Parameters<PackApi['services']['register']>[0];

export function syncService(rt: CalendarRuntime): PackService {
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  return {
    name: 'sync',
    start(ctx) {
      const tick = async () => {
        const timeout = Math.max(rt.fetchTimeoutMs(), 30_000);
        const external = rt.settings.sources().filter((s) => s.kind !== 'file');
        const results = await Promise.all(external.map(async (s) => ({ id: s.id, r: await rt.refresh(s, timeout, ctx.signal) })));
        for (const { id, r } of results) if (r.status === 'failed' && !ctx.signal.aborted) ctx.logger.warn(`calendar ${id}: ${r.reason}`);
        if (stopped || ctx.signal.aborted) return;
        timer = setTimeout(() => void tick(), Math.max(rt.maxAgeMs(), 60_000));
        // A refresh never keeps a process alive that has nothing else to do.
        timer.unref();
      };
      void tick();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}
