/**
 * The audit trail of a data folder, as the kernel keeps it: this instance's own chain on the shared
 * database when there is one (pg-audit-log.ts), else the hash-chained `agent-audit.jsonl` in the
 * folder (audit-log.ts). Opened; the caller closes it. Used by the kernel and by CLI commands that
 * change the folder's settings without a kernel (their admin lines go on the same trail).
 */
import * as path from 'node:path';
import type { DatabaseUrl } from '../storage/database-url.js';
import { instanceId } from '../storage/instance-id.js';
import { AuditLog } from './audit-log.js';
import { PgAuditLog } from './pg-audit-log.js';

export function openAuditTrail(dataDir: string, database: DatabaseUrl | null | undefined): AuditLog | PgAuditLog {
  if (database) {
    const log = new PgAuditLog(database, dataDir, instanceId(dataDir));
    log.open();
    return log;
  }
  const log = new AuditLog(path.join(dataDir, 'agent-audit.jsonl'));
  log.open();
  return log;
}
