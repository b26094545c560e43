// The Node test environment, plus cleanup when a test file ends (after its own afterAll hooks,
// which a setupFilesAfterEnv afterAll would run before): first the teardown tasks the file
// registered through test/helpers/cleanup.ts (kernels shut down, child processes killed), newest
// first, then every temporary folder it registered (tempDir() registers each one).
import { rmSync } from 'node:fs';
import { TestEnvironment } from 'jest-environment-node';

const KEY = '__memoTestCleanup';
const TASK_LIMIT_MS = 60_000;

export default class MemoTestEnvironment extends TestEnvironment {
  async setup() {
    await super.setup();
    this.global[KEY] = { dirs: [], tasks: [] };
  }

  async teardown() {
    const registry = this.global?.[KEY];
    if (registry) {
      for (const task of registry.tasks.splice(0).reverse()) {
        try {
          // A teardown that never settles (a kernel whose shutdown hangs) must fail this file, not hang the run.
          let timer;
          const limit = new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`a teardown task did not finish within ${TASK_LIMIT_MS / 1000} s (${task.label ?? task.name ?? 'unnamed'})`)),
              TASK_LIMIT_MS,
            );
          });
          try {
            await Promise.race([task(), limit]);
          } finally {
            clearTimeout(timer);
          }
        } catch (err) {
          process.stderr.write(`test cleanup: a teardown task failed: ${err?.message ?? err}\n`);
        }
      }
      for (const dir of registry.dirs.splice(0)) {
        try {
          rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
        } catch (err) {
          process.stderr.write(`test cleanup: could not remove ${dir}: ${err?.message ?? err}\n`);
        }
      }
    }
    await super.teardown();
  }
}
