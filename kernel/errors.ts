/**
 * The kernel's stable error codes. Callers check `code`, never `instanceof`: a pack loaded from
 * its own copy of this module still produces errors the kernel recognises.
 */
export const ErrorCodes = [
  'UNKNOWN_TOOL',
  'TOOL_DISABLED',
  'INVALID_ARGS',
  'RATE_LIMITED',
  'PERMISSION_DENIED',
  'PERMISSION_TIMEOUT',
  'APPROVAL_EXPIRED',
  'PATH_OUTSIDE_ROOT',
  'PATH_PROTECTED',
  'COMMAND_BLOCKED',
  'TIMEOUT',
  'CANCELLED',
  'NOT_FOUND',
  'VALIDATION',
  'CONFLICT',
  'TOOL_FAILED',
] as const;

export type ErrorCode = (typeof ErrorCodes)[number];

const codeSet: ReadonlySet<string> = new Set(ErrorCodes);

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && codeSet.has(value);
}

/** Extra, machine-readable facts about a failure (e.g. `retryAfterSeconds`, `problems`). */
export type ErrorDetails = Record<string, unknown>;

export interface MemoErrorInit {
  plugin?: string;
  tool?: string;
  details?: ErrorDetails;
  cause?: unknown;
}

/** An error with a stable code, the plugin and tool it came from, and a sentence a person can act on. */
export class MemoError extends Error {
  readonly code: ErrorCode;
  readonly plugin?: string;
  readonly tool?: string;
  readonly details?: ErrorDetails;

  constructor(code: ErrorCode, message: string, init: MemoErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'MemoError';
    this.code = code;
    if (init.plugin !== undefined) this.plugin = init.plugin;
    if (init.tool !== undefined) this.tool = init.tool;
    if (init.details !== undefined) this.details = init.details;
  }
}

/** True for anything shaped like a MemoError, whichever copy of this module made it. */
export function isMemoError(err: unknown): err is MemoError {
  return typeof err === 'object' && err !== null && isErrorCode((err as { code?: unknown }).code) && typeof (err as { message?: unknown }).message === 'string';
}

/** The serialisable form of an error, as tool results, the CLI and MCP carry it. */
export interface ToolErrorInfo {
  code: ErrorCode;
  message: string;
  plugin?: string;
  tool?: string;
  details?: ErrorDetails;
}

export function toErrorInfo(err: MemoError): ToolErrorInfo {
  const info: ToolErrorInfo = { code: err.code, message: err.message };
  if (err.plugin !== undefined) info.plugin = err.plugin;
  if (err.tool !== undefined) info.tool = err.tool;
  if (err.details !== undefined) info.details = err.details;
  return info;
}
