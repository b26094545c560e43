/**
 * A call's result on its way out: the handler's value checked and copied as JSON (toJsonValue), its
 * one-line summary, the audit line it is recorded as (auditRecord, with long strings shortened and
 * the caller's own names bounded), and the note on a result whose audit line was lost (unrecorded).
 */
import type { AuditRecord } from '../audit/audit-record.js';
import type { Caller, JsonValue, ToolResult } from './contract.js';
import type { RegisteredTool } from './tool-registry.js';

const AUDIT_STRING_MAX = 200;
const SUMMARY_MAX = 200;

/**
 * A call that ran but whose audit line could not be written keeps its result (it cannot be un-run,
 * and an error would invite running it again), but its summary says so: never a silent clean success.
 */
export function unrecorded(result: ToolResult): ToolResult {
  return result.ok ? { ...result, summary: `${result.summary} (its audit line could not be written)` } : result;
}

/** Truncates long strings for the audit line (after masking, so no secret is cut in half and shown). */
function shorten(value: unknown, depth = 0): unknown {
  if (typeof value === 'string')
    return value.length > AUDIT_STRING_MAX ? `${value.slice(0, AUDIT_STRING_MAX)}…(+${value.length - AUDIT_STRING_MAX} chars)` : value;
  if (depth > 8) return '…';
  if (Array.isArray(value))
    return value.length > 50
      ? [...value.slice(0, 50).map((v) => shorten(v, depth + 1)), `…(+${value.length - 50} items)`]
      : value.map((v) => shorten(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = shorten(v, depth + 1);
    return out;
  }
  return value;
}

/** Thrown inside toJsonValue: the value cannot be handed to a model as JSON. */
export class NotJson extends Error {}

/**
 * Validates a handler's result and copies it in one walk: plain objects, arrays, strings, finite
 * numbers, booleans and null are kept (strings are shared, not copied); Dates become ISO strings;
 * undefined properties are dropped. Anything else (functions, BigInt, NaN, Maps, class instances,
 * cycles) is refused. The copy means a handler that keeps mutating its result cannot change what
 * was audited and returned.
 */
export function toJsonValue(value: unknown, depth = 0, seen = new Set<object>()): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new NotJson(`the number ${value}`);
    return value;
  }
  if (typeof value !== 'object') throw new NotJson(`a ${typeof value}`);
  if (value instanceof Date) return value.toISOString();
  if (depth > 64) throw new NotJson('a structure nested more than 64 levels deep');
  if (seen.has(value)) throw new NotJson('a circular structure');
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => toJsonValue(v === undefined ? null : v, depth + 1, seen));
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new NotJson(`an instance of ${value.constructor?.name ?? 'a class'}`);
    const out: { [key: string]: JsonValue } = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = toJsonValue(v, depth + 1, seen);
    return out;
  } finally {
    seen.delete(value);
  }
}

export function summarise(value: JsonValue): string {
  if (value && typeof value === 'object' && !Array.isArray(value) && typeof value.summary === 'string') return value.summary.slice(0, SUMMARY_MAX);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > SUMMARY_MAX ? `${text.slice(0, SUMMARY_MAX)}…` : text;
}

function publicCaller(caller: Caller): { kind: Caller['kind']; id?: string; conversationId?: string; token?: string } {
  const out: { kind: Caller['kind']; id?: string; conversationId?: string; token?: string } = { kind: caller.kind };
  // An MCP client names itself: keep the audit line bounded whatever it says.
  if (caller.id !== undefined) out.id = String(caller.id).slice(0, 100);
  if (caller.conversationId !== undefined) out.conversationId = String(caller.conversationId).slice(0, 100);
  // The client token's name (never the token): which credential made the call.
  if (caller.token !== undefined) out.token = String(caller.token).slice(0, 100);
  return out;
}

/** The audit line of a finished call (its arguments as masked, strings shortened). */
export function auditRecord(
  result: ToolResult,
  ts: string,
  caller: Caller,
  tool: RegisteredTool | undefined,
  masked: unknown,
  decision: string,
  who: { answeredBy: string | undefined; editedBy: string | undefined; askedArgs?: unknown },
): AuditRecord {
  return {
    ts,
    id: result.callId,
    caller: publicCaller(caller),
    tool: result.tool,
    pack: tool?.pack.id ?? null,
    args: shorten(masked),
    decision,
    ...(who.answeredBy ? { answeredBy: who.answeredBy } : {}),
    ...(who.editedBy ? { editedBy: who.editedBy, askedArgs: shorten(who.askedArgs) } : {}),
    outcome: result.ok ? 'ok' : 'error',
    ...(result.ok ? {} : { error: { code: result.error.code, message: result.error.message } }),
    summary: result.ok ? result.summary : result.error.message.slice(0, SUMMARY_MAX),
    durationMs: Math.round(result.durationMs * 1000) / 1000,
  };
}
