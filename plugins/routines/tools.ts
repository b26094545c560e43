/**
 * create_routine, list_routines and cancel_routine. create_routine's preview is what the person
 * approves once: as facts (one line each, shown first and never cut), the schedule read back with the
 * next 3 run times, the pinned provider and model, and each tool with its danger and whether its runs
 * may use it without asking; then, quoted as the model wrote them, the prompt and the person's
 * request. Everything the preview shows is computed by the same `plan` the run stores, so what runs
 * is what was shown.
 */
import { randomUUID } from 'node:crypto';
import {
  MemoError,
  type AccessMode,
  type AgentToolInfo,
  type Concern,
  type PinnedModel,
  type Preview,
  type PreviewFact,
  type ToolContext,
} from 'memo-kernel/pack';
import { runtimeOf, type RoutinesRuntime } from './runtime.js';
import { checkSchedule, formatInstant, nextRuns, type CheckedSchedule, type Schedule } from './schedule.js';
import type { MisfirePolicy, RoutineStatus } from './schema.js';
import type { Routine, Run } from './store.js';
import type { ToolArgs } from './tool-args.js';

/** This pack's own tools that change routines: a routine's runs may never use them. */
const OWN_WRITES = new Set(['create_routine', 'cancel_routine', 'run_routine_now']);

interface Plan {
  name: string;
  prompt: string;
  request: string | null;
  checked: CheckedSchedule;
  firstRun: number;
  upcoming: number[];
  pinned: PinnedModel;
  tools: AgentToolInfo[];
  mode: AccessMode;
  misfire: MisfirePolicy;
  graceMinutes: number;
}

const MODE_NAMES: Record<AccessMode, string> = { vault: 'Vault only', computer: 'Computer access', web: 'Web search only' };

/** An access mode as the person knows it from the chat's mode switch. */
export function modeName(mode: AccessMode): string {
  return MODE_NAMES[mode] ?? mode;
}

function clarify(message: string): MemoError {
  return new MemoError('VALIDATION', message);
}

function scheduleOf(s: ToolArgs['create_routine']['schedule']): Schedule {
  const missing = (field: string, example: string) => clarify(`A ${s.kind} schedule needs ${field} (${example}).`);
  switch (s.kind) {
    case 'cron':
      if (!s.cron) throw missing('cron', "'30 8 * * 1-5'");
      if (!s.time_zone) throw missing('time_zone: which time zone is meant? It is never guessed', 'Europe/Istanbul');
      return { kind: 'cron', cron: s.cron, time_zone: s.time_zone };
    case 'once':
      if (!s.at) throw missing('at, the local date and time', '2026-03-08T09:00');
      if (!s.time_zone) throw missing('time_zone: which time zone is meant? It is never guessed', 'Europe/Istanbul');
      return { kind: 'once', at: s.at, time_zone: s.time_zone };
    case 'every':
      if (s.every === undefined || !s.unit) throw missing('every and unit', 'every: 2, unit: hours');
      return {
        kind: 'every',
        every: s.every,
        unit: s.unit,
        ...(s.start_at ? { start_at: s.start_at } : {}),
        ...(s.time_zone ? { time_zone: s.time_zone } : {}),
      };
  }
}

async function plan(args: ToolArgs['create_routine'], ctx: ToolContext): Promise<Plan> {
  const rt = runtimeOf(ctx);
  if (args.unclear?.length)
    throw clarify(
      `The routine was not created: the request leaves open ${args.unclear.map((q) => `"${q}"`).join('; ')}. Ask the user, then create it with the answers.`,
    );
  const now = rt.now();
  const checked = checkSchedule(scheduleOf(args.schedule), now);
  const upcoming = nextRuns(checked.schedule, checked.anchor ?? null, now, 3);
  if (!upcoming.length) throw clarify('The schedule has no run time still to come.');
  // The chat's own provider and model, not whichever is active now: the person approves what they talk to.
  const pinned = await rt.api.agent.modelFor(ctx.caller);
  if (!pinned)
    throw new MemoError(
      'VALIDATION',
      'No model provider is configured, so a routine would have nothing to run with: add one (memo provider add) and make it active first.',
    );
  const available = new Map(rt.api.agent.tools().map((t) => [t.name, t]));
  const wanted = args.tools ?? [];
  const unknown = wanted.filter((t) => !available.has(t));
  if (unknown.length)
    throw clarify(
      `No tool is called ${unknown.map((t) => `"${t}"`).join(', ')}; a routine may use only tools that exist now (exact names, as the tool list gives them).`,
    );
  const own = wanted.filter((t) => OWN_WRITES.has(t));
  if (own.length) throw clarify(`A routine may not use ${own.join(' or ')}: routines do not create or cancel routines.`);
  // The chat's access mode, which its runs keep: a routine made in Vault only cannot hand its runs the shell.
  // A call from no turn (a person's CLI, a host, an MCP client) is not narrowed by a mode: Computer access.
  const mode: AccessMode = ctx.mode ?? 'computer';
  const outside = mode === 'computer' ? [] : wanted.filter((t) => !available.get(t)!.modes.includes(mode));
  if (outside.length)
    throw clarify(
      `This chat is in ${modeName(mode)}, and a routine created in it may use only the tools ${modeName(mode)} offers: ${outside.join(', ')} ${outside.length === 1 ? 'is' : 'are'} not among them. Leave ${outside.length === 1 ? 'it' : 'them'} out, or ask the user to switch the chat to Computer access first.`,
    );
  return {
    name: args.name.trim(),
    prompt: args.prompt.trim(),
    request: args.request?.trim() || null,
    checked,
    firstRun: upcoming[0]!,
    upcoming,
    pinned,
    tools: wanted.map((t) => available.get(t)!),
    mode,
    misfire: args.misfire ?? 'run_once_if_recent',
    graceMinutes: args.misfire_grace_minutes ?? 60,
  };
}

function toolLine(t: AgentToolInfo): string {
  const label = `${t.name} (${t.danger}, ${t.effect}${t.confirm ? ', confirm always' : ''})`;
  if (t.asksEveryTime) return `${label}: asked every time it runs; never pre-approved`;
  if (t.danger === 'safe') return `${label}: runs without asking`;
  return `${label}: PRE-APPROVED for its runs${t.danger === 'dangerous' ? ' (a dangerous tool)' : ''}, except calls the tool flags for a person (a command the judge cannot vouch for)`;
}

function misfireText(p: { misfire: MisfirePolicy; graceMinutes: number }): string {
  switch (p.misfire) {
    case 'skip':
      return 'a run time missed while Memo was not running is skipped';
    case 'run_once':
      return 'a run time missed while Memo was not running is run once when it is back, however late';
    default:
      return `a run time missed while Memo was not running is run once when it is back if it is less than ${p.graceMinutes} minutes old, otherwise skipped`;
  }
}

function modeText(mode: AccessMode): string {
  return mode === 'computer'
    ? 'Computer access (the mode of the chat it was made in)'
    : `${modeName(mode)} (the mode of the chat it was made in): its runs get no tool that mode does not offer`;
}

function pinnedText(p: PinnedModel): string {
  return `${p.provider} / ${p.model}, pinned now (${p.from === 'conversation' ? "this chat's" : "the active provider's: the call comes from no chat that names one"})`;
}

/** What the person approves: facts the pack vouches for first, the model's own words last, quoted. */
function preview(p: Plan): Preview {
  const zone = p.checked.timeZone;
  const facts: PreviewFact[] = [
    { label: 'routine', value: `"${p.name}"` },
    { label: 'when', value: p.checked.readBack },
    { label: 'next runs', value: p.upcoming.map((t) => formatInstant(t, zone)).join('; ') },
    { label: 'runs with', value: pinnedText(p.pinned) },
    { label: 'access mode', value: modeText(p.mode) },
    ...(p.tools.length ? p.tools.map((t) => ({ label: 'may use', value: toolLine(t) })) : [{ label: 'may use', value: 'no tool (the model can only answer)' }]),
    { label: 'missed runs', value: `${misfireText(p)}.` },
  ];
  return {
    kind: 'text',
    text: 'Any other tool is not available to its runs. Whatever needs a person is asked when it runs, and refused if nobody is watching approvals then.',
    facts,
    quoted: [{ label: 'prompt each run sends', text: p.prompt }, ...(p.request ? [{ label: 'the request it was made for', text: p.request }] : [])],
  };
}

/** The provider and model each call's preview showed (the same ctx reaches preview and run). */
const previewed = new WeakMap<ToolContext, PinnedModel>();

export const createRoutine = {
  async preview(args: ToolArgs['create_routine'], ctx: ToolContext): Promise<Preview> {
    const p = await plan(args, ctx);
    previewed.set(ctx, p.pinned);
    return preview(p);
  },
  /**
   * Runs before anyone is asked: a routine that cannot be created (an unclear or invalid schedule,
   * an unknown tool) is refused here, so nobody approves something that would fail. A routine that
   * pre-approves a medium or dangerous tool is asked about every time: no standing approval of
   * create_routine may hand out standing approvals of other tools unseen.
   */
  async assess(args: ToolArgs['create_routine'], ctx: ToolContext): Promise<Concern | null> {
    const rt = runtimeOf(ctx);
    await plan(args, ctx);
    const available = new Map(rt.api.agent.tools().map((t) => [t.name, t]));
    const granted = (args.tools ?? []).filter((t) => {
      const info = available.get(t);
      return info && info.danger !== 'safe' && !info.asksEveryTime;
    });
    return granted.length
      ? {
          verdict: 'ask',
          rule: 'routine-pre-approval',
          reason: `The routine pre-approves ${granted.join(', ')} for its runs; a person must see that each time.`,
        }
      : null;
  },
  async run(args: ToolArgs['create_routine'], ctx: ToolContext): Promise<unknown> {
    const rt = runtimeOf(ctx);
    const p = await plan(args, ctx);
    const shown = previewed.get(ctx);
    if (shown && (shown.provider !== p.pinned.provider || shown.model !== p.pinned.model))
      throw new MemoError(
        'CONFLICT',
        `The routine was not created: it was shown to run with ${shown.provider} / ${shown.model}, and would now run with ${p.pinned.provider} / ${p.pinned.model}. Ask again.`,
      );
    const store = await rt.store();
    const now = rt.now();
    const routine = await store.create({
      id: `rt_${randomUUID().replace(/-/g, '').slice(0, 12)}`,
      name: p.name,
      prompt: p.prompt,
      schedule: p.checked.schedule,
      readBack: p.checked.readBack,
      timeZone: p.checked.timeZone,
      anchor: p.checked.anchor ?? null,
      provider: p.pinned.provider,
      model: p.pinned.model,
      tools: p.tools.map((t) => t.name),
      mode: p.mode,
      misfire: p.misfire,
      misfireGraceMinutes: p.graceMinutes,
      status: 'active',
      nextRunAt: p.firstRun,
      createdBy: ctx.caller.id ? `${ctx.caller.kind}:${ctx.caller.id}` : ctx.caller.kind,
      createdAt: now,
    });
    void rt.scheduler.kick();
    return {
      id: routine.id,
      name: routine.name,
      schedule: routine.readBack,
      next_runs: p.upcoming.map((t) => formatInstant(t, p.checked.timeZone)),
      provider: routine.provider,
      model: routine.model,
      tools: p.tools.map((t) => ({ name: t.name, danger: t.danger, pre_approved: !t.asksEveryTime })),
      mode: routine.mode,
      misfire: routine.misfire,
      ...(rt.scheduler.isRunning
        ? {}
        : { note: 'No scheduler runs in this process: the routine runs while `memo serve` (or a host app) runs on this data folder.' }),
    };
  },
};

function shorten(text: string | null, max = 300): string | null {
  if (!text) return null;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function lastResult(run: Run | null, zone: string): Record<string, unknown> | null {
  if (!run) return null;
  return {
    status: run.status,
    at: formatInstant(run.scheduledFor, zone),
    attempt: run.attempt,
    ...(run.answer ? { answer: shorten(run.answer) } : {}),
    ...(run.error ? { error: shorten(run.error) } : {}),
    ...(run.retryAt ? { retry_at: formatInstant(run.retryAt, zone) } : {}),
  };
}

/** A run as routine_history and `memo routines history --json` show it. */
export function runJson(run: Run, zone: string): Record<string, unknown> {
  return {
    id: run.id,
    scheduled_for: formatInstant(run.scheduledFor, zone),
    started_at: new Date(run.startedAt).toISOString(),
    ended_at: run.endedAt === null ? null : new Date(run.endedAt).toISOString(),
    attempt: run.attempt,
    trigger: run.trigger,
    status: run.status,
    stop_reason: run.stopReason,
    answer: run.answer,
    error: run.error,
    steps: run.steps,
    retry_at: run.retryAt === null ? null : formatInstant(run.retryAt, zone),
  };
}

/** A routine as list_routines and the CLI show it. */
export function describeRoutine(r: Routine, last: Run | null): Record<string, unknown> {
  return {
    id: r.id,
    name: r.name,
    schedule: r.readBack,
    status: r.status,
    next_run: r.status === 'active' && r.nextRunAt !== null ? formatInstant(r.nextRunAt, r.timeZone) : null,
    provider: r.provider,
    model: r.model,
    tools: r.tools,
    mode: r.mode,
    misfire: r.misfire,
    last_result: lastResult(last, r.timeZone),
  };
}

export async function listRoutines(args: ToolArgs['list_routines'], ctx: ToolContext): Promise<unknown> {
  const rt = runtimeOf(ctx);
  const store = await rt.store();
  const statuses: RoutineStatus[] | undefined =
    args.status === 'all' ? undefined : args.status ? [args.status] : (['active', 'paused', 'done'] satisfies RoutineStatus[]);
  const routines = (await store.list(statuses)).slice(0, args.limit ?? 50);
  const out = [];
  for (const r of routines) out.push(describeRoutine(r, await store.lastRun(r.id)));
  return { routines: out, count: out.length };
}

async function routineOrFail(rt: RoutinesRuntime, id: string): Promise<Routine> {
  const routine = await (await rt.store()).get(id);
  if (!routine) throw new MemoError('NOT_FOUND', `There is no routine "${id}" (list_routines gives the ids).`);
  return routine;
}

export const cancelRoutine = {
  /** An unknown id is refused before anyone is asked. */
  async assess(args: ToolArgs['cancel_routine'], ctx: ToolContext): Promise<null> {
    await routineOrFail(runtimeOf(ctx), args.id);
    return null;
  },
  async preview(args: ToolArgs['cancel_routine'], ctx: ToolContext): Promise<Preview> {
    const rt = runtimeOf(ctx);
    const r = await routineOrFail(rt, args.id);
    const store = await rt.store();
    const running = rt.scheduler.runningHere(r.id) || (await store.running(r.id, rt.now() - 3 * 60_000)).length > 0;
    const upcoming = r.status === 'active' ? nextRuns(r.schedule, r.anchor, rt.now(), 3) : [];
    return {
      kind: 'text',
      text: 'Pending retries are dropped. Its history is kept.',
      facts: [
        { label: 'routine', value: `"${r.name}" (${r.id}), ${r.status}: ${r.readBack}` },
        upcoming.length
          ? {
              label: 'runs that will not happen',
              value: `${upcoming.map((t) => formatInstant(t, r.timeZone)).join('; ')}${r.schedule.kind === 'once' ? '' : ', and every later one'}`,
            }
          : { label: 'runs that will not happen', value: 'none: no run is scheduled' },
        ...(running ? [{ label: 'run in progress', value: 'stopped' }] : []),
      ],
    };
  },
  async run(args: ToolArgs['cancel_routine'], ctx: ToolContext): Promise<unknown> {
    const rt = runtimeOf(ctx);
    const r = await routineOrFail(rt, args.id);
    if (r.status === 'cancelled') return { id: r.id, name: r.name, status: 'cancelled', already: true };
    const store = await rt.store();
    await store.setStatus(r.id, 'cancelled', rt.now(), null);
    // A run on another host stops at its next heartbeat, which reads the status.
    const stopped = rt.scheduler.stopRun(r.id, 'the routine was cancelled');
    void rt.scheduler.kick();
    return {
      id: r.id,
      name: r.name,
      status: 'cancelled',
      stopped_run: stopped,
      was: r.status,
      next_run_dropped: r.nextRunAt !== null && r.status === 'active',
    };
  },
};

export async function routineHistory(args: ToolArgs['routine_history'], ctx: ToolContext): Promise<unknown> {
  const rt = runtimeOf(ctx);
  const r = await routineOrFail(rt, args.id);
  const runs = await (await rt.store()).history(r.id, args.limit ?? 20);
  return { id: r.id, name: r.name, runs: runs.map((run) => runJson(run, r.timeZone)), count: runs.length };
}

/** Runs a routine once now, outside its schedule (the schedule is unchanged); routine_history shows how it ends. */
export const runRoutineNow = {
  /** An unknown or cancelled routine is refused before anyone is asked. */
  async assess(args: ToolArgs['run_routine_now'], ctx: ToolContext): Promise<null> {
    const r = await routineOrFail(runtimeOf(ctx), args.id);
    if (r.status === 'cancelled') throw new MemoError('CONFLICT', `${r.name} is cancelled; create it again to run it.`);
    return null;
  },
  async preview(args: ToolArgs['run_routine_now'], ctx: ToolContext): Promise<Preview> {
    const r = await routineOrFail(runtimeOf(ctx), args.id);
    return {
      kind: 'text',
      text: 'It runs once now, outside its schedule; the schedule is unchanged.',
      facts: [
        { label: 'routine', value: `"${r.name}" (${r.id}): ${r.readBack}` },
        { label: 'runs with', value: `${r.provider} / ${r.model}` },
        { label: 'access mode', value: modeName(r.mode) },
        { label: 'may use', value: r.tools.length ? r.tools.join(', ') : 'no tool' },
      ],
      quoted: [{ label: 'prompt it sends', text: r.prompt, from: 'the model, when the routine was created' }],
    };
  },
  async run(args: ToolArgs['run_routine_now'], ctx: ToolContext): Promise<unknown> {
    const rt = runtimeOf(ctx);
    const r = await routineOrFail(rt, args.id);
    if (r.status === 'cancelled') throw new MemoError('CONFLICT', `${r.name} is cancelled; create it again to run it.`);
    // No signal of this call: the run goes on after the call returns, as a scheduled run does.
    const started = await rt.scheduler.runNow(r);
    if (!started.runId) throw new MemoError('CONFLICT', `${r.name} was not run: ${started.reason}.`);
    return { started: true, id: r.id, name: r.name, run_id: started.runId, summary: `started a run of ${r.name}; routine_history shows how it ends` };
  },
};
