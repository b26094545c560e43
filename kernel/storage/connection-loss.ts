/**
 * Whether a node-postgres failure means the server cannot be reached or used (refused, reset, gone
 * mid-query, shut down, timed out) rather than a statement's own error. The error codes are Node's
 * socket errors and PostgreSQL's shutdown states (57P01 administrator, 57P02 crash, 57P03 starting),
 * plus SQLSTATE class 08 (connection exception); pg's own words cover a connection that ends under
 * a query and its client-side timeouts. (The audit's worker, run from its source text, keeps its
 * own copy of this test: it can import nothing.)
 */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE', '57P01', '57P02', '57P03']);
const UNREACHABLE_WORDS = /Connection terminated|connection timeout|Query read timeout|not queryable|Client has encountered a connection error/i;

export function isConnectionLoss(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : undefined;
  return (
    (code !== undefined && (UNREACHABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) ||
    UNREACHABLE_WORDS.test(typeof e.message === 'string' ? e.message : '')
  );
}
