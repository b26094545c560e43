/**
 * The CLI's changes to a data folder's settings (packs, permissions, always-allow, providers, the
 * sandbox setting) go on the folder's audit trail as `admin` lines, as the console's and a host's do
 * (kernel/compose/admin-actions.ts): the line is written first, by `cli`, and a change whose line cannot
 * be written is not made. The trail is the kernel's own (the file, or this instance's chain on the
 * shared database), opened for the line and closed again; a running memo serve shares it safely.
 */
import { recorded, type AdminRecord } from '../compose/admin-actions.js';
import { KnownSecrets } from '../secrets/known-secrets.js';
import { openAuditTrail } from '../audit/open-audit.js';
import { databaseFromSetting } from '../storage/database-url.js';
import type { Cli } from './context.js';

/** Records `record` (by `cli`) on the data folder's trail, then runs `apply`; a failure after the line gets a second line saying so. */
export async function cliRecorded<R>(cli: Pick<Cli, 'dataDir'>, record: Omit<AdminRecord, 'by'>, apply: () => R | Promise<R>): Promise<R> {
  const trail = openAuditTrail(cli.dataDir(), databaseFromSetting(process.env.MEMO_DATABASE_URL));
  try {
    return await recorded(trail, { ...record, by: 'cli' }, apply, new KnownSecrets());
  } finally {
    await trail.close();
  }
}
