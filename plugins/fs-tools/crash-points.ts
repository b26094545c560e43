/**
 * TEST-ONLY crash points for the atomic write (test/plugins/fs-tools/compiled.test.ts).
 *
 * A crash test sets `MEMO_TEST_PAUSE_ATOMIC_WRITE=<step>:<marker file>` in the environment of a
 * process it is about to SIGKILL. When that process's atomic write reaches `<step>`, it writes the
 * marker file and then blocks its thread for good, so the test kills it exactly there instead of
 * guessing with a timer. Steps, in the order a write passes them:
 *
 *   temp-created   the temporary file exists, empty
 *   temp-partial   half of the new content is in the temporary file
 *   temp-written   the temporary file is complete and synced; nothing else changed yet
 *   backup-made    the `.bak` copy (or link) exists under its own temporary name
 *   before-rename  the `.bak` is in place; the target still holds the old content
 *   after-rename   the target holds the new content; the folder is not synced yet
 *
 * Inert in production: the variable is read once, when this module loads; unset (always, outside
 * these tests), `PAUSE` is null and each crash point costs one null check.
 */
import { writeFileSync } from 'node:fs';

export type CrashStep = 'temp-created' | 'temp-partial' | 'temp-written' | 'backup-made' | 'before-rename' | 'after-rename';

export const PAUSE: { readonly step: string; readonly marker: string } | null = parse(process.env.MEMO_TEST_PAUSE_ATOMIC_WRITE);

function parse(value: string | undefined): { step: string; marker: string } | null {
  const colon = value ? value.indexOf(':') : -1;
  return value && colon > 0 ? { step: value.slice(0, colon), marker: value.slice(colon + 1) } : null;
}

/** At the chosen step: writes the marker file and blocks this process until it is killed. */
export function crashPoint(step: CrashStep): void {
  if (PAUSE === null || PAUSE.step !== step) return;
  writeFileSync(PAUSE.marker, step);
  // Blocks the thread (and so every other write) without spinning; only a signal ends it.
  for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}
