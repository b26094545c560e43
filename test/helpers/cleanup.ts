/**
 * What a test file leaves behind is removed when the file ends: the test environment
 * (test/helpers/jest-environment.mjs) runs the registered teardown tasks (shut kernels down, kill
 * child processes), newest first, and then removes every registered folder. It runs after the
 * file's own afterAll hooks, so a suite that closes its kernel in afterAll still can.
 */
import type { ChildProcess } from 'node:child_process';

/** Shared with jest-environment.mjs through the test file's global object. */
export interface CleanupRegistry {
  dirs: string[];
  tasks: Array<() => unknown>;
}

const KEY = '__memoTestCleanup';

function registry(): CleanupRegistry {
  const g = globalThis as unknown as Record<string, CleanupRegistry | undefined>;
  // Without the Memo test environment (a foreign jest config) nothing is collected, nothing removed.
  return (g[KEY] ??= { dirs: [], tasks: [] });
}

/** Removes `dir` (recursively) when the test file ends. */
export function removeWhenDone(dir: string): string {
  registry().dirs.push(dir);
  return dir;
}

/** Runs `task` when the test file ends, before folders are removed. Tasks run newest first. */
export function atTeardown(task: () => unknown): void {
  registry().tasks.push(task);
}

/** Kills `child` (SIGKILL) at the end of the test file if it is still running, and waits for it. */
export function killWhenDone<T extends ChildProcess>(child: T): T {
  atTeardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  });
  return child;
}
