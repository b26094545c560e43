/**
 * Fork bombs: shell functions that, between them, keep starting copies of themselves concurrently
 * (piped into each other or backgrounded): `:(){ :|:& };:` under any name, and mutual recursion
 * such as `a(){ b|b& }; b(){ a|a& }; a`. The walk records, for each function it is inside, the
 * commands it calls and whether concurrently (also the calls of an `eval` or a `bash -c` body inside
 * it); a function is refused when it is defined if a cycle of calls through it holds a concurrent
 * call. Judged on the definition, since the call that sets it off may come anywhere after.
 */
import { found, type Ctx, type Finding } from './context.js';
import { code } from './words.js';

/** Records that the function being walked calls `callee` (concurrently or not). */
export function recordCall(callee: string, ctx: Ctx): void {
  if (ctx.fn === undefined) return;
  const calls = ctx.run.functions.get(ctx.fn);
  if (!calls) return;
  calls.set(callee, (calls.get(callee) ?? false) || !!ctx.concurrent);
}

/**
 * Once the function `name` has been walked: the cycle of calls leading back to it with a concurrent
 * call on the way, if any (the functions on it, in call order, starting with `name`).
 */
function concurrentCycle(name: string, ctx: Ctx): string[] | null {
  const graph = ctx.run.functions;
  // Depth-first over (function, concurrent call seen so far); each state once.
  const seen = new Set<string>();
  const stack: Array<{ fn: string; concurrent: boolean; path: string[] }> = [{ fn: name, concurrent: false, path: [name] }];
  while (stack.length > 0) {
    const { fn, concurrent, path } = stack.pop()!;
    for (const [callee, calledConcurrently] of graph.get(fn) ?? []) {
      const c = concurrent || calledConcurrently;
      if (callee === name) {
        if (c) return path;
        continue;
      }
      const key = `${c ? 1 : 0}${callee}`;
      if (!graph.has(callee) || seen.has(key)) continue;
      seen.add(key);
      stack.push({ fn: callee, concurrent: c, path: [...path, callee] });
    }
  }
  return null;
}

/** The fork bomb a function definition completes, if it completes one. */
export function forkBomb(name: string, ctx: Ctx): Finding | null {
  const cycle = concurrentCycle(name, ctx);
  if (!cycle) return null;
  if (cycle.length === 1) return found(ctx, 'fork-bomb', `The function ${code(name)} runs copies of itself concurrently, a fork bomb`);
  return found(
    ctx,
    'fork-bomb',
    `The functions ${cycle.map(code).join(', ')} call each other in a cycle that runs copies concurrently, a fork bomb that multiplies processes`,
  );
}
