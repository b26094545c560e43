import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MemoError } from '../errors.js';
import { writeFileAtomic } from '../util/atomic-file.js';

/** What an instance id may be: short, printable in a log line and usable in a key or a file name. */
const INSTANCE_ID = /^[a-z0-9][a-z0-9-]{0,39}$/;

const FILE = 'instance-id';

const known = new Map<string, string>();

/**
 * The name of this Memo instance among those sharing one PostgreSQL database: `MEMO_INSTANCE_ID` when
 * set (lower-case letters, digits and dashes, at most 40), otherwise an id made once and kept in
 * `<dataDir>/instance-id`, so a restarted instance is the same instance (a given MEMO_INSTANCE_ID is
 * written there too, so the folder keeps its name for commands run without it). Each instance has its own
 * data folder; two instances given the same id (a copied data folder, one variable set twice) would
 * share audit chains and leases, so a host that clones data folders must set the variable.
 */
export function instanceId(dataDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const given = env.MEMO_INSTANCE_ID?.trim();
  if (given && !INSTANCE_ID.test(given))
    throw new MemoError('VALIDATION', 'MEMO_INSTANCE_ID must be 1-40 lower-case letters, digits or dashes, starting with a letter or digit.');
  const cached = known.get(dataDir);
  if (cached && (!given || cached === given)) return cached;
  const file = path.join(dataDir, FILE);
  let stored: string | undefined;
  try {
    const text = fs.readFileSync(file, 'utf8').trim();
    if (INSTANCE_ID.test(text)) stored = text;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // The variable wins, and the folder remembers it: a `memo` command run later on this data folder
  // without the variable (memo audit verify, say) is the same instance, not a new one.
  const id = given ?? stored ?? `i-${randomBytes(6).toString('hex')}`;
  if (id !== stored) writeFileAtomic(file, `${id}\n`, 0o600);
  known.set(dataDir, id);
  return id;
}
