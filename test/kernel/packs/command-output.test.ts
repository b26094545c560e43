import { commandDone, commandFailed, commandGuarded } from '../../../kernel/packs/pack-commands.js';
import { MemoError } from '../../../kernel/errors.js';

/** What a pack command prints, as the CLI's context would collect it. */
function output(json: boolean) {
  const printed: unknown[] = [];
  return { printed, ctx: { options: { json }, print: (v: unknown) => void printed.push(v) } };
}

describe("pack commands' shared output", () => {
  it('prints a success as text for people and as {ok, result} under --json, exit 0', () => {
    const text = output(false);
    expect(commandDone(text.ctx, { n: 1 }, 'one thing done')).toBe(0);
    expect(text.printed).toEqual(['one thing done']);
    const json = output(true);
    expect(commandDone(json.ctx, { n: 1 }, 'one thing done')).toBe(0);
    expect(json.printed).toEqual([{ ok: true, result: { n: 1 } }]);
  });

  it('prints a failure as CODE: message or {ok: false, error}, exit 2 for a wrong command line and 1 otherwise', () => {
    const text = output(false);
    expect(commandFailed(text.ctx, 'VALIDATION', 'no such calendar')).toBe(2);
    expect(commandFailed(text.ctx, 'NOT_FOUND', 'gone')).toBe(1);
    expect(text.printed).toEqual(['VALIDATION: no such calendar', 'NOT_FOUND: gone']);
    const json = output(true);
    commandFailed(json.ctx, 'CONFLICT', 'changed');
    expect(json.printed).toEqual([{ ok: false, error: { code: 'CONFLICT', message: 'changed' } }]);
  });

  it('turns what the work throws into a failure with its code, TOOL_FAILED when it has none', async () => {
    const o = output(false);
    expect(await commandGuarded(o.ctx, () => 0)).toBe(0);
    expect(
      await commandGuarded(o.ctx, () => {
        throw new MemoError('VALIDATION', 'bad date');
      }),
    ).toBe(2);
    expect(await commandGuarded(o.ctx, () => Promise.reject(new Error('disk full')))).toBe(1);
    expect(o.printed).toEqual(['VALIDATION: bad date', 'TOOL_FAILED: disk full']);
  });
});
