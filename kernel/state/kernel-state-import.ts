/**
 * The one-time copy of a data folder's `permissions.json`, `packs.json`, `providers.json` and
 * `settings.json` into memo_kernel, when an instance first starts on a database whose tables for
 * that store are still empty (as the vault's planning data was copied: plugins/vault/planning-copy.ts).
 *
 * Every store that can be copied is copied in one transaction, which takes an advisory lock first
 * (instances starting together take turns), checks the row counts before it commits, and records
 * each copy in `file_imports`: a store is copied once per database, never again (not even when its
 * tables are emptied later, say by revoking every permission), and a store whose tables another
 * instance already filled keeps its rows (this instance's file is then left out, with a warning).
 * The files stay as they are: nothing reads them while the database is used, and they are the
 * person's copy should the database be lost. A file that cannot be read is left out with the
 * store's own warning, and copied at a later start if its tables are still empty then.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DataSource, EntityManager } from 'typeorm';
import { ProviderSettings } from '../providers/provider-settings.js';
import { SettingsStore } from './kernel-state-settings.js';
import type { Logger } from '../logger.js';
import { PackSettings } from '../packs/pack-settings.js';
import { PermissionStore } from '../permissions/permission-store.js';
import { KernelStateDb, type KernelStateOptions, type KernelStoreName, type SecretBox } from '../storage/kernel-state-db.js';
import type { DatabaseUrl } from '../storage/database-url.js';
import { insertDecision, packWrites, permissionWrites, providerWrites, settingsWrites } from './kernel-state-tables.js';

interface Source {
  store: KernelStoreName;
  file: string;
  /** Reads the file with its store's own parser; null when it cannot be used (the store warned). */
  read(): { rows: number; copy: (m: EntityManager, box: SecretBox | null) => Promise<void> } | null;
}

const COUNTS: Record<KernelStoreName, string> = {
  // A setting counts when it is on: always-allow true, external writes on for all or for a client.
  permissions:
    `SELECT (SELECT COUNT(*) FROM "permission_decisions") + (SELECT COUNT(*) FROM "kernel_values" WHERE "store" = 'permissions' AND "key" = 'alwaysAllow' AND "value" = 'true'::jsonb) + ` +
    `(SELECT COUNT(*) FROM "kernel_values" WHERE "store" = 'permissions' AND "key" = 'externalWrites' AND ("value"->>'all' = 'true' OR jsonb_array_length("value"->'clients') > 0)) AS n`,
  packs: `SELECT COUNT(*) AS n FROM "pack_settings"`,
  providers: `SELECT COUNT(*) AS n FROM "providers"`,
  settings: `SELECT COUNT(*) AS n FROM "kernel_values" WHERE "store" = 'settings'`,
};

function sources(dataDir: string, logger: Logger): Source[] {
  const file = (name: string) => path.join(dataDir, name);
  return [
    {
      store: 'permissions',
      file: file('permissions.json'),
      read() {
        const s = new PermissionStore(this.file, logger);
        if (s.problem) return null;
        // One per slot (tool, scope, conversation), the last one winning, as the store keeps them.
        const slots = new Map(s.list().map((d) => [`${d.tool}\u0000${d.scope}\u0000${d.conversationId ?? ''}`, d]));
        const decisions = [...slots.values()];
        const alwaysAllow = s.alwaysAllow;
        const external = s.externalWrites;
        const externalOn = external.all || external.clients.length > 0;
        return {
          rows: decisions.length + (alwaysAllow ? 1 : 0) + (externalOn ? 1 : 0),
          copy: async (m, box) => {
            for (const d of decisions) await insertDecision(m, d);
            if (alwaysAllow) await m.query(`INSERT INTO "kernel_values" ("store", "key", "value") VALUES ('permissions', 'alwaysAllow', 'true'::jsonb)`);
            if (externalOn) await permissionWrites.externalWrites(external)(m, box);
          },
        };
      },
    },
    {
      store: 'packs',
      file: file('packs.json'),
      read() {
        const s = new PackSettings(this.file, logger);
        if (s.problem) return null;
        const entries = s.stored();
        return {
          rows: entries.length,
          copy: async (m, box) => {
            for (const [id, entry] of entries) await packWrites.entry(id, entry)(m, box);
          },
        };
      },
    },
    {
      store: 'providers',
      file: file('providers.json'),
      read() {
        const s = new ProviderSettings(this.file, logger);
        const list = s.list();
        if (s.problem) return null;
        const active = s.active()?.name ?? null;
        const providers = Object.fromEntries(list.map((c) => [c.name, c]));
        const mode = s.defaultMode();
        return { rows: list.length, copy: (m, box) => providerWrites.all({ version: 1, active, providers, ...(mode !== 'computer' ? { mode } : {}) })(m, box) };
      },
    },
    {
      store: 'settings',
      file: file('settings.json'),
      read() {
        const s = new SettingsStore(dataDir, logger);
        if (s.problem) return null;
        const { rateLimit } = s.read();
        return { rows: rateLimit === undefined ? 0 : 1, copy: (m, box) => settingsWrites.rateLimit(rateLimit)(m, box) };
      },
    },
  ];
}

/** Copies the files once (see the file comment). Throws, saying nothing was copied, when the copy fails. */
export async function copyFilesOnce(ds: DataSource, dataDir: string, instance: string, box: SecretBox | null, logger: Logger): Promise<void> {
  const present = sources(dataDir, logger).filter((s) => fs.existsSync(s.file));
  if (present.length === 0) return;
  const copied: string[] = [];
  try {
    await ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext('memo_kernel:file-copy'))`);
      const marks = await m.query<Array<{ store: string; instance: string; at: Date }>>(`SELECT "store", "instance", "at" FROM "file_imports"`);
      for (const source of present) {
        const mark = marks.find((r) => r.store === source.store);
        const parsed = mark && mark.instance === instance ? null : source.read();
        if (mark) {
          if (parsed && parsed.rows > 0)
            logger.warn(
              `${source.file} was not copied into the shared database: its ${source.store} were copied there from instance ${mark.instance} (${new Date(mark.at).toISOString()}) and are used instead; the file is left as it is`,
            );
          continue;
        }
        if (!parsed) continue;
        const before = Number((await m.query<Array<{ n: string }>>(COUNTS[source.store]))[0]?.n ?? 0);
        if (before > 0) {
          if (parsed.rows > 0)
            logger.warn(
              `${source.file} was not copied into the shared database: it already holds ${source.store} (written by another instance), which are used instead; the file is left as it is`,
            );
          continue;
        }
        await parsed.copy(m, box);
        const after = Number((await m.query<Array<{ n: string }>>(COUNTS[source.store]))[0]?.n ?? 0);
        if (after !== parsed.rows) throw new Error(`${source.file}: ${parsed.rows} entries read, ${after} rows written`);
        await m.query(`INSERT INTO "file_imports" ("store", "instance", "rows") VALUES ($1, $2, $3)`, [source.store, instance, parsed.rows]);
        await m.query(`UPDATE "state_versions" SET "version" = "version" + 1 WHERE "store" = $1`, [source.store]);
        copied.push(`${parsed.rows} from ${path.basename(source.file)}`);
      }
    });
  } catch (err) {
    throw new Error(
      `Copying the data folder's settings files into the shared database failed, so nothing was copied (the files are as they were; the next start tries again): ${(err as Error).message}`,
      { cause: err },
    );
  }
  if (copied.length) logger.info(`copied into the shared database once: ${copied.join(', ')} (the files are kept as they were, and no longer read)`);
}

/**
 * The kernel's state on a shared database, as a kernel or a command opens it: the storage engine
 * (KernelStateDb) with this data folder's files copied in the first time (copyFilesOnce).
 */
export function kernelStateDb(url: DatabaseUrl, dataDir: string, logger: Logger, options: KernelStateOptions = {}): KernelStateDb {
  return new KernelStateDb(url, dataDir, logger, { importFiles: copyFilesOnce, ...options });
}
