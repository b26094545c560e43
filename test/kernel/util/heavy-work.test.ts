/**
 * runHeavy: work in real worker threads, ended by its deadline, its signal or its heap limit, while
 * the event loop that asked goes on. The tasks are plain modules in test/fixtures/heavy.
 */
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { threadId } from 'node:worker_threads';
import { MemoError } from '../../../kernel/errors.js';
import { heavyWorkers, runHeavy } from '../../../kernel/util/heavy-work.js';

const TASKS = pathToFileURL(path.resolve('test/fixtures/heavy/tasks.mjs'));

/** Counts event-loop turns while `work` runs: a loop blocked by it would count none. */
async function ticksDuring<T>(work: Promise<T>): Promise<{ ticks: number; result: PromiseSettledResult<T> }> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  const [result] = await Promise.allSettled([work]);
  clearInterval(timer);
  return { ticks, result };
}

describe('runHeavy', () => {
  it('runs the exported function in another thread and returns what it returns', async () => {
    const r = await runHeavy<{ input: unknown; threadId: number }>(TASKS, 'echo', { a: [1, 2], b: 'x' });
    expect(r.input).toEqual({ a: [1, 2], b: 'x' });
    expect(r.threadId).not.toBe(threadId);
  });

  it('ends a function that never awaits when its deadline passes, and the caller’s loop runs meanwhile', async () => {
    const { ticks, result } = await ticksDuring(runHeavy(TASKS, 'spin', null, { deadlineMs: 600, what: 'Spinning' }));
    expect(result.status).toBe('rejected');
    expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'TIMEOUT', message: 'Spinning took longer than 1 s and was stopped.' });
    expect(ticks).toBeGreaterThan(0);
    // The next call gets a fresh worker.
    expect((await runHeavy<{ input: number }>(TASKS, 'echo', 7)).input).toBe(7);
  });

  it('ends the work when the signal aborts, with the signal’s own reason when it carries a code', async () => {
    const ac = new AbortController();
    const p = runHeavy(TASKS, 'spin', null, { signal: ac.signal });
    setTimeout(() => ac.abort(new MemoError('TIMEOUT', 'the tool took longer than 120 s')), 200);
    await expect(p).rejects.toMatchObject({ code: 'TIMEOUT', message: 'the tool took longer than 120 s' });
    const plain = new AbortController();
    const q = runHeavy(TASKS, 'spin', null, { signal: plain.signal, what: 'Spinning' });
    setTimeout(() => plain.abort(), 200);
    await expect(q).rejects.toMatchObject({ code: 'CANCELLED', message: 'Spinning was stopped.' });
    await expect(runHeavy(TASKS, 'echo', 1, { signal: plain.signal })).rejects.toMatchObject({ code: 'CANCELLED' });
  });

  it('keeps the code and details of what the function throws', async () => {
    await expect(runHeavy(TASKS, 'fail', null)).rejects.toMatchObject({ code: 'VALIDATION', message: 'the input is not a calendar', details: { line: 3 } });
  });

  it('stops a worker that outgrows its heap, saying so, and keeps serving', async () => {
    await expect(runHeavy(TASKS, 'hog', null, { what: 'Hoarding' })).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: 'Hoarding needed more than 1024 MB of memory and was stopped.',
    });
    expect((await runHeavy<{ input: string }>(TASKS, 'echo', 'after')).input).toBe('after');
  });

  it('reuses idle workers, runs two at once, and queues the rest until one is free', async () => {
    const first = await runHeavy<{ threadId: number }>(TASKS, 'later', { ms: 1 });
    const again = await runHeavy<{ threadId: number }>(TASKS, 'later', { ms: 1 });
    expect(again.threadId).toBe(first.threadId);
    const many = await Promise.all(Array.from({ length: 6 }, () => runHeavy<{ threadId: number }>(TASKS, 'later', { ms: 100 })));
    expect(new Set(many.map((m) => m.threadId)).size).toBeGreaterThanOrEqual(2);
    expect(heavyWorkers()).toBeLessThanOrEqual(4);
  });

  it('moves buffers instead of copying them: to the worker (the sender’s copy emptied) and back (the value unwrapped)', async () => {
    const bytes = new Uint8Array([1, 2, 3, 250]).buffer;
    const r = await runHeavy<{ bytes: ArrayBuffer; length: number }>(TASKS, 'doubleBytes', { bytes }, { transfer: [bytes] });
    // Moved to the worker: nothing is left here.
    expect(bytes.byteLength).toBe(0);
    // Moved back, changed there: the value without the transfer wrapper.
    expect(r.length).toBe(4);
    expect([...new Uint8Array(r.bytes)]).toEqual([2, 4, 6, 244]);
  });

  it('says what is missing when a module does not exist', async () => {
    await expect(runHeavy(pathToFileURL(path.resolve('test/fixtures/heavy/none.js')), 'x', null)).rejects.toMatchObject({ code: 'TOOL_FAILED' });
  });
});
