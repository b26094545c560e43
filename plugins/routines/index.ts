/**
 * The built-in `routines` pack: scheduled agent turns. The tools create, list and cancel routines;
 * `activate` contributes the scheduler service that `memo serve` (or a host's `kernel.start()`)
 * runs, `memo routines ...`, and the web console's Routines panel.
 */
import { defineTools, type Disposable, type PackApi } from 'memo-kernel/pack';
import { routinesCommand } from './commands.js';
import { register, unregister } from './runtime.js';
import { cancelRoutine, createRoutine, listRoutines, routineHistory, runRoutineNow } from './tools.js';
import type { ToolArgs } from './tool-args.js';

export const tools = defineTools<ToolArgs>({
  create_routine: createRoutine,
  list_routines: listRoutines,
  cancel_routine: cancelRoutine,
  routine_history: routineHistory,
  run_routine_now: runRoutineNow,
});

export function activate(api: PackApi): Disposable {
  const rt = register(api);
  api.commands.register(routinesCommand(rt));
  // The web console's panel (data only): each action is one of these tools, run through the pipeline.
  api.panels.register({
    id: 'routines',
    title: 'Routines',
    description: 'Scheduled agent turns: each routine with its schedule, next run and last result; see its runs, run it now or cancel it (asked in the inbox).',
    lists: [
      {
        id: 'routines',
        title: 'Routines',
        tool: 'list_routines',
        args: { status: 'all' },
        rows: 'routines',
        columns: [
          { key: 'name', label: 'Routine' },
          { key: 'schedule', label: 'Schedule' },
          { key: 'status', label: 'Status' },
          { key: 'next_run', label: 'Next run' },
          { key: 'model', label: 'Model' },
          { key: 'last_result', label: 'Last result' },
        ],
        rowActions: [
          { id: 'history', label: 'Runs', tool: 'routine_history', from: { id: 'id' } },
          { id: 'run-now', label: 'Run now', tool: 'run_routine_now', from: { id: 'id' } },
          { id: 'cancel', label: 'Cancel', tool: 'cancel_routine', from: { id: 'id' } },
        ],
        refreshSeconds: 30,
        empty: 'No routines yet. Ask the agent for one ("every weekday at 8, summarise my inbox"), or use memo routines add.',
      },
    ],
  });
  api.services.register({
    name: 'scheduler',
    start: () => rt.scheduler.start(),
    stop: () => rt.scheduler.stop(),
  });
  // For a host app or console: wait for the scheduler's look or its runs in progress, see whether one runs here.
  api.provide('routines.scheduler', {
    idle: () => rt.scheduler.idle(),
    settled: () => rt.scheduler.settled(),
    runningHere: (routineId: string) => rt.scheduler.runningHere(routineId),
  });
  return { dispose: () => void unregister(rt) };
}
