/**
 * Whether a node-postgres failure means the server cannot be reached or used (refused, reset, gone
 * mid-query, shut down, timed out) rather than a statement's own error. The error codes are Node's
 * socket errors and PostgreSQL's shutdown states (57P01 administrator, 57P02 crash, 57P03 starting),
 * plus SQLSTATE class 08 (connection exception); pg's own words cover a connection that ends under
 * a query and its client-side timeouts. An error Memo already explained (markConnectionLoss; typeorm
 * copies the mark onto the QueryFailedError it wraps one in) counts too. (The audit's worker, run
 * from its source text, keeps its own copy of this test: it can import nothing.)
 */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE', '57P01', '57P02', '57P03']);
const UNREACHABLE_WORDS = /Connection terminated|connection timeout|Query read timeout|not queryable|Client has encountered a connection error/i;

export function isConnectionLoss(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; connectionLost?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (e.connectionLost === true) return true;
  const code = typeof e.code === 'string' ? e.code : undefined;
  return (
    (code !== undefined && (UNREACHABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) ||
    UNREACHABLE_WORDS.test(typeof e.message === 'string' ? e.message : '')
  );
}

/**
 * Marks an error that says, in Memo's words, that the database cannot be reached: isConnectionLoss
 * knows it by the mark (its message no longer has the driver's words), and it is never explained twice.
 */
export function markConnectionLoss<E extends Error>(err: E): E & { connectionLost: true } {
  return Object.assign(err, { connectionLost: true as const });
}

/**
 * Why the connection failed, for the parentheses of a refusal: the server's own words
 * ("terminating connection due to administrator command", "the database system is starting up") or
 * the socket's error ("connect ECONNREFUSED 127.0.0.1:5432", "read ECONNRESET") as they are; pg's
 * phrasings of its own client state ("Connection terminated unexpectedly", "Client has encountered
 * a connection error and is not queryable") say what happened in plain words instead.
 */
export function connectionLossReason(err: unknown): string {
  const message = String((err as { message?: unknown } | null)?.message ?? err);
  if (/^Connection terminated unexpectedly$/i.test(message)) return 'the server closed the connection';
  if (/^Connection terminated$/i.test(message)) return 'the connection was closed';
  if (/not queryable/i.test(message)) return 'the connection had already failed';
  return message;
}
