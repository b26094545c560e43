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
    description: 'Scheduled agent turns: list them, see a routine’s runs, run one now (asked in the inbox), or cancel one.',
    actions: [
      { id: 'list', label: 'List routines', tool: 'list_routines' },
      { id: 'history', label: 'Show its runs', tool: 'routine_history' },
      { id: 'run-now', label: 'Run now', tool: 'run_routine_now' },
      { id: 'cancel', label: 'Cancel routine', tool: 'cancel_routine' },
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
