/**
 * The contract every desktop bridge operation keeps (see bridge.ts for the dispatch), and the argument
 * helpers they share. A module of its own so the operation files and bridge.ts import it without a cycle.
 */
import { MemoError, type Effect, type JsonValue, type Preview, type ToolContext } from 'memo-kernel/pack';
import type { Feature } from './features.js';

/** One allowlisted operation. `P` is what `parse` makes of the args array. */
export interface BridgeOp<P = unknown> {
  name: string;
  /** read: only through vault_desktop_read. write/delete: only through vault_desktop_write; a delete asks every time. */
  effect: Effect;
  /** Asked every time, like a delete (an edit to a note's body: the seed's note edits take no standing approval). */
  askEveryTime?: true;
  /** The surface it belongs to: switched off, the call is refused saying so. */
  feature?: Feature;
  /** It fetches from the network (captureLink, captureUrlToProject): the preview says so. */
  network?: boolean;
  /** The args it takes and what it answers, one line, for the error that lists operations. */
  usage: string;
  /** The args array as the operation's parameters; throws MemoError VALIDATION naming what is wrong. */
  parse(args: JsonValue[]): P;
  /** Writes: references and values checked before anyone is asked (throw to refuse). */
  check?(p: P, ctx: ToolContext): Promise<void>;
  /** Writes: what a person is shown (field changes, a body diff, what a delete loses). */
  preview?(p: P, ctx: ToolContext): Promise<Preview>;
  /** The work; its answer is merged after `success: true`. A MemoError becomes `{success: false, error}`. */
  run(p: P, ctx: ToolContext): Promise<Record<string, unknown>>;
}

/** Declares an operation with its parameter type checked against its own parse. */
export const op = <P>(o: BridgeOp<P>): BridgeOp => o;

/** The args array's `i`th item as an object (the seed's single-object shape), or VALIDATION. */
export function objectArg(args: JsonValue[], i = 0): Record<string, JsonValue> {
  const v = args[i];
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new MemoError('VALIDATION', `args[${i}] must be an object.`);
  return v;
}

export function stringArg(v: JsonValue | undefined, what: string, options: { optional?: false; max?: number }): string;
export function stringArg(v: JsonValue | undefined, what: string, options: { optional: true; max?: number }): string | undefined;
export function stringArg(v: JsonValue | undefined, what: string, options: { optional?: boolean; max?: number } = {}): string | undefined {
  if (v === undefined && options.optional) return undefined;
  if (typeof v !== 'string' || v.trim() === '') throw new MemoError('VALIDATION', `${what} must be a non-empty text.`);
  if (v.length > (options.max ?? 2000)) throw new MemoError('VALIDATION', `${what} is longer than ${options.max ?? 2000} characters.`);
  return v.trim();
}

export function booleanArg(v: JsonValue | undefined, what: string): boolean {
  if (typeof v !== 'boolean') throw new MemoError('VALIDATION', `${what} must be true or false.`);
  return v;
}

/** The args array as the one object an operation takes, with only the keys it knows (VALIDATION otherwise). */
export function oneObject(args: JsonValue[], keys: readonly string[]): Record<string, JsonValue> {
  if (args.length !== 1) throw new MemoError('VALIDATION', 'it takes one object.');
  const o = objectArg(args);
  onlyKeys(o, keys);
  return o;
}

/** For an operation that takes nothing: an empty args array, or VALIDATION. */
export function noArgs(args: JsonValue[]): null {
  if (args.length) throw new MemoError('VALIDATION', 'it takes no arguments.');
  return null;
}

/** Refuses keys the operation does not take (a misspelt key is not silently ignored). */
export function onlyKeys(o: Record<string, JsonValue>, allowed: readonly string[]): void {
  const extra = Object.keys(o).filter((k) => !allowed.includes(k));
  if (extra.length) throw new MemoError('VALIDATION', `unknown ${extra.length === 1 ? 'key' : 'keys'} ${extra.join(', ')}; it takes ${allowed.join(', ')}.`);
}
