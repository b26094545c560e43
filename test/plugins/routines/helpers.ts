import * as path from 'node:path';
import Database from 'better-sqlite3';
import { ManualClock } from '../../../kernel/clock.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import type { PackDefinition } from '../../../kernel/tools/tool-registry.js';
import { echoPack, makeKernel, ScriptedPrompter, tool, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, type Script } from '../../helpers/scripted-provider.js';

export const PLUGINS = path.resolve('plugins');

/** Friday 2026-03-27 12:00 UTC: two days before Europe's clocks go forward. */
export const FRIDAY_NOON = Date.UTC(2026, 2, 27, 12, 0);

interface SchedulerOffer {
  idle(): Promise<void>;
  settled(): Promise<void>;
  runningHere(routineId: string): boolean;
}

export interface RunRecord {
  id: string;
  routine_id: string;
  scheduled_for: number;
  attempt: number;
  trigger: string;
  status: string;
  answer: string | null;
  error: string | null;
  steps: string;
  retry_at: number | null;
  heartbeat_at: number | null;
  stop_reason: string | null;
}

export interface RoutinesFixture extends Fixture {
  /** Every provider the kernel made (one per run), in order. */
  providers: ScriptedProvider[];
  /** What the scripted model does in the next runs. */
  script: Script;
  call(tool: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** Waits until the scheduler has nothing in flight (its look, its runs, its timer set). */
  settle(): Promise<void>;
  /** Waits until the scheduler is done looking (runs may go on: for runs that hang). */
  idle(): Promise<void>;
  /** Moves the kernel's clock to `at` (firing the timers due on the way), then settles. */
  advanceTo(at: number): Promise<void>;
  runs(routineId?: string): RunRecord[];
  dbFile: string;
}

/** Two echo tools that Vault only offers (the echo pack's are Computer access only). */
function notesPack(): PackDefinition {
  const echo = (args: Record<string, unknown>) => ({ echoed: args });
  return {
    id: 'notes-pack',
    version: '1.0.0',
    modes: ['vault'],
    tools: [
      { spec: tool('note_read', 'safe'), impl: echo },
      { spec: tool('note_write', 'medium', 'write'), impl: echo },
    ],
  };
}

/**
 * A real kernel with the echo tools and the built-in routines pack (loaded from `plugins/`), a
 * scripted model as the active provider (`scripted-one` / `model-a`), a fake clock and a prompter
 * that allows once. The scheduler is started unless `start: false`.
 */
export async function routinesKernel(
  options: {
    dataDir?: string;
    clock?: ManualClock;
    prompter?: ScriptedPrompter | null;
    start?: boolean;
    script?: Script;
    /** `refuse`: as under memo serve, a question nobody watches is refused at once. */
    unattendedApprovals?: 'wait' | 'refuse';
    /** Adds notes-pack, whose note_read (safe) and note_write (medium) Vault only offers. */
    vaultTools?: boolean;
  } = {},
): Promise<RoutinesFixture> {
  const clock = options.clock ?? new ManualClock(FRIDAY_NOON);
  const fx = makeKernel({
    packs: [echoPack(), ...(options.vaultTools ? [notesPack()] : [])],
    clock,
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.prompter !== undefined ? { prompter: options.prompter } : {}),
    ...(options.unattendedApprovals ? { unattendedApprovals: options.unattendedApprovals } : {}),
  });
  const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['routines'] }]);
  const mine = statuses.find((s) => s.id === 'routines');
  if (mine?.status !== 'loaded') throw new Error(`routines did not load: ${mine?.error ?? 'not found'}`);
  if (options.prompter === undefined) fx.prompter.setFallback('allow-once');
  const providers: ScriptedProvider[] = [];
  const state: { script: Script } = { script: options.script ?? (() => reply('done')) };
  fx.kernel.providers.register(
    'scripted',
    () => {
      const p = new ScriptedProvider((req, n) => state.script(req, n));
      providers.push(p);
      return p;
    },
    'test',
  );
  if (!fx.kernel.providerSettings.get('scripted-one')) fx.kernel.providerSettings.put({ name: 'scripted-one', kind: 'scripted', model: 'model-a' });
  if (options.start !== false) await fx.kernel.start();
  const scheduler = () => {
    const s = fx.kernel.shared.lookup<SchedulerOffer>('routines.scheduler');
    if (!s) throw new Error('the routines pack offers no scheduler');
    return s;
  };
  const dbFile = path.join(fx.dataDir, 'packs-data', 'routines', 'routines.sqlite');
  const out = Object.assign(fx, {
    providers,
    call: (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent', conversationId: 'c-1' } }),
    settle: () => scheduler().settled(),
    idle: () => scheduler().idle(),
    async advanceTo(at: number) {
      await scheduler().settled();
      if (at > clock.now()) clock.advance(at - clock.now());
      await scheduler().settled();
    },
    runs(routineId?: string): RunRecord[] {
      const db = new Database(dbFile, { readonly: true, fileMustExist: true });
      try {
        const rows = db
          .prepare(`SELECT * FROM routine_runs ${routineId ? 'WHERE routine_id = ?' : ''} ORDER BY scheduled_for, attempt`)
          .all(...(routineId ? [routineId] : [])) as RunRecord[];
        return rows.map((r) => ({
          ...r,
          scheduled_for: Number(r.scheduled_for),
          retry_at: r.retry_at === null ? null : Number(r.retry_at),
          heartbeat_at: r.heartbeat_at === null ? null : Number(r.heartbeat_at),
        }));
      } finally {
        db.close();
      }
    },
    dbFile,
  });
  // An accessor, so a test can change what the model does between runs.
  Object.defineProperty(out, 'script', { get: () => state.script, set: (s: Script) => void (state.script = s), enumerable: true });
  return out as RoutinesFixture;
}

export function value(r: ToolResult): any {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.value;
}

export function error(r: ToolResult): { code: string; message: string } {
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r.value).slice(0, 300)}`);
  return r.error;
}

/** A model call that waits until its turn is stopped (a run in progress), then fails as a cancelled request does. */
export function hangsUntilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(new Error('aborted'));
    signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
  });
}

export const iso = (ms: number) => new Date(ms).toISOString();
