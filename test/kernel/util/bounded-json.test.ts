import fc from 'fast-check';
import { jsonRpcIdOf, MAX_JSON_DEPTH, nestedDeeperThan, parseBoundedJson } from '../../../kernel/util/bounded-json.js';

/** The nesting depth of a parsed value, counted without recursion. */
function depthOf(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    max = Math.max(max, d + 1);
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

describe('bounded JSON', () => {
  it('counts nesting as JSON.parse sees it, for any JSON, in text and in bytes', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 0, max: 12 }), (value, max) => {
        const text = JSON.stringify(value);
        const deeper = depthOf(value) > max;
        expect(nestedDeeperThan(text, max)).toBe(deeper);
        expect(nestedDeeperThan(Buffer.from(text), max)).toBe(deeper);
      }),
      { numRuns: 500 },
    );
  });

  it('does not count brackets inside strings, escaped quotes and backslashes included', () => {
    const decoys = JSON.stringify({ a: '[[[[{{{{', b: '\\"[[[[', c: '\\', d: '"{{{{"', e: '\u00e9[[[[' });
    expect(nestedDeeperThan(decoys, 1)).toBe(false);
    expect(nestedDeeperThan(`[${decoys}]`, 1)).toBe(true);
  });

  it('refuses 20,000 levels without overflowing, and parses up to the limit', () => {
    const deep = '['.repeat(20_000) + ']'.repeat(20_000);
    expect(parseBoundedJson(deep)).toEqual({ error: 'too-deep' });
    const atLimit = '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH);
    expect(depthOf((parseBoundedJson(atLimit) as { value: unknown }).value)).toBe(MAX_JSON_DEPTH);
    expect(parseBoundedJson(Buffer.from('{"a":'))).toEqual({ error: 'not-json' });
  });

  it("reads a refused request's top-level id, and null when there is none to read", () => {
    const deep = '['.repeat(20_000) + ']'.repeat(20_000);
    expect(jsonRpcIdOf(`{"jsonrpc":"2.0","id":7,"params":${deep}}`)).toBe(7);
    expect(jsonRpcIdOf(`{"params":{"id":1,"x":${deep}},"id":"req-\\"8\\""}`)).toBe('req-"8"');
    expect(jsonRpcIdOf(`{"params":{"id":1,"x":${deep}}}`)).toBeNull();
    expect(jsonRpcIdOf(`{"method":"id","id":null,"params":${deep}}`)).toBeNull();
    expect(jsonRpcIdOf(`[{"id":3,"params":${deep}}]`)).toBeNull();
    expect(jsonRpcIdOf('{"id":')).toBeNull();
  });
});
