/**
 * Fork bombs: a function whose body runs the function itself concurrently (piped into itself or
 * backgrounded), `:(){ :|:& };:` under any name. Judged on the definition, since the call that
 * sets it off may come anywhere after.
 */
import type { Node } from 'web-tree-sitter';
import { found, type Ctx, type Finding } from './context.js';
import { code, wordsOf } from './words.js';

/** A function whose body runs the function itself concurrently: piped into itself or backgrounded. */
export function forkBomb(def: Node, ctx: Ctx): Finding | null {
  const nameNode = def.childForFieldName('name');
  const body = def.childForFieldName('body');
  if (!nameNode || !body) return null;
  const name = wordsOf(nameNode)[0]?.text;
  if (name === undefined) return null;
  const calls = body.descendantsOfType('command').filter((c): c is Node => {
    const n = c?.childForFieldName('name')?.namedChild(0);
    return !!n && wordsOf(n)[0]?.text === name;
  });
  const concurrent = calls.some((call) => {
    for (let n: Node | null = call; n && n.id !== body.id; n = n.parent) {
      if (n.parent?.type === 'pipeline' || n.nextSibling?.type === '&') return true;
    }
    return false;
  });
  return concurrent ? found(ctx, 'fork-bomb', `The function ${code(name)} runs copies of itself concurrently, a fork bomb`) : null;
}
