/**
 * The built-in `routines` pack: scheduled agent turns. The tools create, list and cancel routines;
 * `activate` contributes the scheduler service that `memo serve` (or a host's `kernel.start()`)
 * runs, and `memo routines ...`.
 */
import { defineTools, type Disposable, type PackApi } from 'memo-kernel/pack';
import { routinesCommand } from './commands.js';
import { register, unregister } from './runtime.js';
import { cancelRoutine, createRoutine, listRoutines } from './tools.js';
import type { ToolArgs } from './tool-args.js';

export const tools = defineTools<ToolArgs>({
  create_routine: createRoutine,
  list_routines: listRoutines,
  cancel_routine: cancelRoutine,
});

export function activate(api: PackApi): Disposable {
  const rt = register(api);
  api.commands.register(routinesCommand(rt));
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
