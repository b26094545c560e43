/**
 * `memo routines list|show|history|run-now|pause|resume|cancel`, for people. Listing goes through
 * list_routines and cancelling through cancel_routine (the pipeline: audited, and cancel is asked
 * with its preview). Pausing, resuming and running now are the person's own decisions about a
 * routine they approved, made directly in the pack's database; a `memo serve` on the same data
 * folder sees them at its next look (within a minute). A run started with run-now runs in this
 * process, as the routine (its pre-approved tools, its pinned model), and is recorded in the
 * history like any other.
 */
import { commandDone as done, commandFailed as fail, commandGuarded as guarded, MemoError, type PackApi } from 'memo-kernel/pack';
import type { RoutinesRuntime } from './runtime.js';
import { formatInstant, nextRunAfter, nextRuns } from './schedule.js';
import type { Routine, Run } from './store.js';
import { describeRoutine, modeName, runJson } from './tools.js';

type PackCommand = Parameters<PackApi['commands']['register']>[0];
type Ctx = Parameters<PackCommand['subcommands'][number]['run']>[0];

async function routineNamed(rt: RoutinesRuntime, ctx: Ctx): Promise<Routine> {
  const id = String(ctx.args.id ?? '');
  const r = await (await rt.store()).get(id);
  if (!r) throw new MemoError('NOT_FOUND', `There is no routine "${id}" (memo routines list).`);
  return r;
}

function runLine(run: Run, zone: string): string {
  const what = run.status === 'skipped' ? (run.error ?? '') : (run.answer ?? run.error ?? '');
  const short = what.replace(/\s+/g, ' ').slice(0, 120);
  return `${formatInstant(run.scheduledFor, zone)}  ${run.status}${run.attempt > 1 ? ` (attempt ${run.attempt})` : ''}  ${run.trigger}  ${run.steps.length} step(s)${short ? `  ${short}` : ''}`;
}

const json = { flags: '--json', description: 'print JSON' };
const idArg = [{ name: 'id', required: true, description: 'the routine id (memo routines list)' }];

export function routinesCommand(rt: RoutinesRuntime): PackCommand {
  return {
    name: 'routines',
    description: 'scheduled routines: list, show, history, run-now, pause, resume, cancel',
    subcommands: [
      {
        name: 'list',
        description: 'the routines, with their schedule, next run and last result',
        options: [{ flags: '--all', description: 'include cancelled routines' }, json],
        run: (ctx) =>
          guarded(ctx, async () => {
            const r = await ctx.invoke('list_routines', ctx.options.all ? { status: 'all' } : {});
            if (!r.ok) return fail(ctx, r.error.code, r.error.message);
            const list = (
              r.value as {
                routines: Array<{
                  id: string;
                  status: string;
                  name: string;
                  schedule: string;
                  next_run: string | null;
                  last_result: { status: string } | null;
                }>;
              }
            ).routines;
            const text = list.length
              ? list
                  .map(
                    (x) =>
                      `${x.id}  ${x.status}  ${x.name}: ${x.schedule}${x.next_run ? `; next ${x.next_run}` : ''}${x.last_result ? `; last ${x.last_result.status}` : ''}`,
                  )
                  .join('\n')
              : 'No routines.';
            return done(ctx, r.value, text);
          }),
      },
      {
        name: 'show',
        description: 'one routine: its prompt, tools, next runs and its latest runs',
        arguments: idArg,
        options: [json],
        run: (ctx) =>
          guarded(ctx, async () => {
            const r = await routineNamed(rt, ctx);
            const store = await rt.store();
            const recent = await store.history(r.id, 5);
            const upcoming = r.status === 'active' ? nextRuns(r.schedule, r.anchor, rt.now(), 3) : [];
            const value = {
              ...describeRoutine(r, recent[0] ?? null),
              prompt: r.prompt,
              next_runs: upcoming.map((t) => formatInstant(t, r.timeZone)),
              created: new Date(r.createdAt).toISOString(),
              created_by: r.createdBy,
              recent_runs: recent.map((run) => runJson(run, r.timeZone)),
            };
            const text = [
              `${r.name} (${r.id}), ${r.status}`,
              `When: ${r.readBack}`,
              ...(upcoming.length ? [`Next runs: ${upcoming.map((t) => formatInstant(t, r.timeZone)).join('; ')}`] : []),
              `Asks ${r.provider} / ${r.model}: "${r.prompt}"`,
              `Tools: ${r.tools.length ? r.tools.join(', ') : 'none'}`,
              `Access mode: ${modeName(r.mode)}`,
              `Missed runs: ${r.misfire}${r.misfire === 'run_once_if_recent' ? ` (${r.misfireGraceMinutes} minutes)` : ''}`,
              ...(recent.length ? ['Recent runs:', ...recent.map((run) => `  ${runLine(run, r.timeZone)}`)] : ['No runs yet.']),
            ].join('\n');
            return done(ctx, value, text);
          }),
      },
      {
        name: 'history',
        description: "a routine's runs, newest first: start, end, status, stop reason, tool steps, answer",
        arguments: idArg,
        options: [{ flags: '--limit <n>', description: 'how many runs (default 20)', default: '20' }, json],
        run: (ctx) =>
          guarded(ctx, async () => {
            const r = await routineNamed(rt, ctx);
            const limit = Number(ctx.options.limit);
            if (!Number.isInteger(limit) || limit < 1 || limit > 1000) return fail(ctx, 'VALIDATION', '--limit takes a whole number from 1 to 1000.');
            const runs = await (await rt.store()).history(r.id, limit);
            return done(
              ctx,
              { id: r.id, name: r.name, runs: runs.map((run) => runJson(run, r.timeZone)) },
              runs.length ? runs.map((run) => runLine(run, r.timeZone)).join('\n') : `${r.name} has not run yet.`,
            );
          }),
      },
      {
        name: 'run-now',
        description: 'run a routine once now, in this process, and print how it ended (its schedule is unchanged)',
        arguments: idArg,
        options: [json],
        run: (ctx) =>
          guarded(ctx, async () => {
            const r = await routineNamed(rt, ctx);
            if (r.status === 'cancelled') return fail(ctx, 'CONFLICT', `${r.name} is cancelled; create it again to run it.`);
            const started = await rt.scheduler.runNow(r, ctx.signal);
            if (!started.runId) return fail(ctx, 'CONFLICT', `${r.name} was not run: ${started.reason}.`);
            await rt.scheduler.settled();
            const run = (await (await rt.store()).history(r.id, 20)).find((x) => x.id === started.runId);
            if (!run) return fail(ctx, 'TOOL_FAILED', 'The run was not recorded.');
            const text = [runLine(run, r.timeZone), ...(run.answer ? ['', run.answer] : [])].join('\n');
            ctx.print(ctx.options.json ? { ok: run.status === 'ok', result: runJson(run, r.timeZone) } : text);
            return run.status === 'ok' ? 0 : 1;
          }),
      },
      {
        name: 'pause',
        description: 'stop scheduling a routine until it is resumed (a run in progress finishes; pending retries are dropped)',
        arguments: idArg,
        options: [json],
        run: (ctx) =>
          guarded(ctx, async () => {
            const r = await routineNamed(rt, ctx);
            if (r.status !== 'active') return fail(ctx, 'CONFLICT', `${r.name} is ${r.status}, not active.`);
            await ctx.record({ action: 'routine.pause', target: r.id, change: { name: r.name } });
            await (await rt.store()).setStatus(r.id, 'paused', rt.now(), null);
            return done(ctx, { id: r.id, status: 'paused' }, `${r.name} is paused; memo routines resume ${r.id} schedules it again.`);
          }),
      },
      {
        name: 'resume',
        description: 'schedule a paused routine again from now (run times missed while paused are not run)',
        arguments: idArg,
        options: [json],
        run: (ctx) =>
          guarded(ctx, async () => {
            const r = await routineNamed(rt, ctx);
            if (r.status !== 'paused') return fail(ctx, 'CONFLICT', `${r.name} is ${r.status}, not paused.`);
            const next = nextRunAfter(r.schedule, r.anchor, rt.now());
            if (next === null)
              return fail(ctx, 'CONFLICT', `${r.name} has no run time still to come (a one-off whose time passed while it was paused); create a new routine.`);
            await ctx.record({ action: 'routine.resume', target: r.id, change: { name: r.name } });
            await (await rt.store()).setStatus(r.id, 'active', rt.now(), next);
            return done(
              ctx,
              { id: r.id, status: 'active', next_run: formatInstant(next, r.timeZone) },
              `${r.name} is active again; next run ${formatInstant(next, r.timeZone)}.`,
            );
          }),
      },
      {
        name: 'cancel',
        description: 'cancel a routine for good (through cancel_routine, which asks with its preview); its history is kept',
        arguments: idArg,
        options: [json],
        run: (ctx) =>
          guarded(ctx, async () => {
            const r = await ctx.invoke('cancel_routine', { id: String(ctx.args.id ?? '') });
            if (!r.ok) return fail(ctx, r.error.code, r.error.message);
            const v = r.value as { name: string; stopped_run?: boolean };
            return done(ctx, r.value, `${v.name} is cancelled${v.stopped_run ? '; its run in progress was stopped' : ''}.`);
          }),
      },
    ],
  };
}
