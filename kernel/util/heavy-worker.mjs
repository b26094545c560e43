// A worker thread of heavy-work.ts: imports a module and runs one exported function per message.
// Plain JavaScript with no imports but Node's: it runs by path, from the source tree under test and
// from dist/ when installed. Errors go back as { code, message, details } (MemoError's shape).
import { parentPort } from 'node:worker_threads';

parentPort.on('message', async ({ id, module, fn, input }) => {
  try {
    const mod = await import(module);
    if (typeof mod[fn] !== 'function') throw new Error(`${module} exports no function ${fn}`);
    const value = await mod[fn](input);
    // { memoHeavyTransfer: [buffers], value }: the buffers are moved, not copied (HEAVY_TRANSFER in heavy-work.ts).
    if (value && typeof value === 'object' && Array.isArray(value.memoHeavyTransfer))
      parentPort.postMessage({ id, ok: true, value: value.value }, value.memoHeavyTransfer);
    else parentPort.postMessage({ id, ok: true, value });
  } catch (err) {
    const e = err && typeof err === 'object' ? err : { message: String(err) };
    parentPort.postMessage({
      id,
      ok: false,
      error: {
        code: typeof e.code === 'string' ? e.code : undefined,
        message: typeof e.message === 'string' ? e.message : String(err),
        details: e.details && typeof e.details === 'object' ? JSON.parse(JSON.stringify(e.details)) : undefined,
      },
    });
  }
});
