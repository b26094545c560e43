/**
 * The rows of `memo_kernel` (kernel-state-migrations.ts) as the stores' in-memory shapes, and each
 * store's writes as row-level statements, so two instances changing the same store at once both
 * land: a permission decision, a pack, a provider is its own row; a pack's settings are merged into
 * what the row holds (jsonb `||`), not replaced by this instance's copy.
 *
 * Provider keys and header values are sealed with AES-256-GCM (the conversation cipher) under the key
 * in `data/kernel.key`, bound to the provider's name, before any statement sees them: the database
 * holds ciphertext only, so neither its logs nor a driver's error message can carry a key.
 */
import type { EntityManager } from 'typeorm';
import type { ProviderConfig } from '../providers/provider.js';
import type { AccessMode } from '../tools/contract.js';
import { MemoError } from '../errors.js';
import { isClientName, isProfiles, isTokens } from '../util/mcp-settings.js';
import type {
  ExternalWritesSetting,
  McpProfileSetting,
  McpTokenSetting,
  PackEntry,
  PackShape,
  PermissionShape,
  ProviderShape,
  RateLimitSetting,
  SandboxSetting,
  Settings,
  StoredDecision,
} from './shapes.js';
import type { RemoteChange, SecretBox, StoreTable } from '../storage/kernel-state-db.js';

const providerContext = (name: string) => `provider/${name}/secret`;

function noBox(): never {
  throw new MemoError('CONFLICT', 'A provider key cannot be stored: this instance has no usable data/kernel.key (see the warning at its start).');
}

// --- permissions ---------------------------------------------------------------------------------

interface DecisionRow {
  tool: string;
  scope: StoredDecision['scope'];
  conversation_id: string;
  decision: StoredDecision['decision'];
  plugin: string | null;
  given_at: string;
  expires_at: Date | string | null;
}

export const permissionsTable: StoreTable<PermissionShape> = {
  name: 'permissions',
  empty: () => ({ version: 2, alwaysAllow: false, decisions: [] }),
  async load(m) {
    const rows = await m.query<DecisionRow[]>(
      `SELECT "tool", "scope", "conversation_id", "decision", "plugin", "given_at", "expires_at" FROM "permission_decisions" ORDER BY "tool", "scope", "conversation_id"`,
    );
    const flags = await m.query<Array<{ key: string; value: unknown }>>(
      `SELECT "key", "value" FROM "kernel_values" WHERE "store" = 'permissions' AND "key" IN ('alwaysAllow', 'externalWrites')`,
    );
    const flag = (key: string) => flags.find((f) => f.key === key)?.value;
    const external = flag('externalWrites');
    return {
      version: 2,
      alwaysAllow: flag('alwaysAllow') === true,
      // A value that is not well-formed is off (fail closed), like an unusable file.
      ...(isExternalWrites(external) ? { externalWrites: external } : {}),
      decisions: rows.map((r) => ({
        tool: r.tool,
        decision: r.decision,
        plugin: r.plugin,
        at: r.given_at,
        scope: r.scope,
        ...(r.scope === 'until' && r.expires_at !== null ? { expiresAt: new Date(r.expires_at).toISOString() } : {}),
        ...(r.scope === 'conversation' ? { conversationId: r.conversation_id } : {}),
      })),
    };
  },
};

export async function insertDecision(m: EntityManager, d: StoredDecision): Promise<void> {
  await m.query(
    `INSERT INTO "permission_decisions" ("tool", "scope", "conversation_id", "decision", "plugin", "given_at", "expires_at") VALUES ($1, $2, $3, $4, $5, $6, $7) ` +
      `ON CONFLICT ("tool", "scope", "conversation_id") DO UPDATE SET "decision" = EXCLUDED."decision", "plugin" = EXCLUDED."plugin", "given_at" = EXCLUDED."given_at", "expires_at" = EXCLUDED."expires_at"`,
    [d.tool, d.scope, d.conversationId ?? '', d.decision, d.plugin, d.at, d.scope === 'until' ? (d.expiresAt ?? null) : null],
  );
}

async function putValue(m: EntityManager, store: string, key: string, value: unknown): Promise<void> {
  await m.query(
    `INSERT INTO "kernel_values" ("store", "key", "value") VALUES ($1, $2, $3::jsonb) ON CONFLICT ("store", "key") DO UPDATE SET "value" = EXCLUDED."value"`,
    [store, key, JSON.stringify(value)],
  );
}

export const permissionWrites = {
  /** Replaces the decision of its slot; drops the ones expired at `now`. */
  set:
    (d: StoredDecision, now: number): RemoteChange =>
    async (m) => {
      await m.query(`DELETE FROM "permission_decisions" WHERE "scope" = 'until' AND "expires_at" <= $1`, [new Date(now).toISOString()]);
      await insertDecision(m, d);
    },
  revoke:
    (tool: string): RemoteChange =>
    async (m) =>
      void (await m.query(`DELETE FROM "permission_decisions" WHERE "tool" = $1`, [tool])),
  forgetConversation:
    (id: string): RemoteChange =>
    async (m) =>
      void (await m.query(`DELETE FROM "permission_decisions" WHERE "scope" = 'conversation' AND "conversation_id" = $1`, [id])),
  alwaysAllow:
    (on: boolean): RemoteChange =>
    (m) =>
      putValue(m, 'permissions', 'alwaysAllow', on),
  externalWrites:
    (value: ExternalWritesSetting): RemoteChange =>
    (m) =>
      putValue(m, 'permissions', 'externalWrites', value),
};

/** A stored external-writes setting: `all` and a list of client names (see ExternalWritesSetting). */
export function isExternalWrites(value: unknown): value is ExternalWritesSetting {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { all, clients } = value as Record<string, unknown>;
  return typeof all === 'boolean' && Array.isArray(clients) && clients.every(isClientName);
}

// --- packs ---------------------------------------------------------------------------------------

export const packsTable: StoreTable<PackShape> = {
  name: 'packs',
  empty: () => ({ version: 1, packs: Object.create(null) as Record<string, PackEntry> }),
  async load(m) {
    const rows = await m.query<Array<{ pack_id: string; enabled: boolean | null; config: Record<string, unknown> | null }>>(
      `SELECT "pack_id", "enabled", "config" FROM "pack_settings"`,
    );
    const packs = Object.create(null) as Record<string, PackEntry>;
    for (const r of rows) packs[r.pack_id] = { ...(r.enabled !== null ? { enabled: r.enabled } : {}), ...(r.config !== null ? { config: r.config } : {}) };
    return { version: 1, packs };
  },
};

export const packWrites = {
  enabled:
    (id: string, enabled: boolean): RemoteChange =>
    async (m) =>
      void (await m.query(
        `INSERT INTO "pack_settings" ("pack_id", "enabled") VALUES ($1, $2) ON CONFLICT ("pack_id") DO UPDATE SET "enabled" = EXCLUDED."enabled"`,
        [id, enabled],
      )),
  /** Merges `changes` into the stored settings (top-level keys, as the file store does), whatever another instance stored meanwhile. */
  config:
    (id: string, changes: Record<string, unknown>): RemoteChange =>
    async (m) =>
      void (await m.query(
        `INSERT INTO "pack_settings" ("pack_id", "config") VALUES ($1, $2::jsonb) ON CONFLICT ("pack_id") DO UPDATE SET "config" = COALESCE("pack_settings"."config", '{}'::jsonb) || EXCLUDED."config"`,
        [id, JSON.stringify(changes)],
      )),
  /** A whole entry, as the file held it (the one-time copy). */
  entry:
    (id: string, entry: PackEntry): RemoteChange =>
    async (m) =>
      void (await m.query(`INSERT INTO "pack_settings" ("pack_id", "enabled", "config") VALUES ($1, $2, $3::jsonb)`, [
        id,
        typeof entry.enabled === 'boolean' ? entry.enabled : null,
        entry.config ? JSON.stringify(entry.config) : null,
      ])),
};

// --- providers -----------------------------------------------------------------------------------

interface Secret {
  apiKey?: string;
  headers?: Record<string, string>;
}

export const providersTable: StoreTable<ProviderShape> = {
  name: 'providers',
  empty: () => ({ version: 1, active: null, providers: Object.create(null) as Record<string, ProviderConfig> }),
  async load(m, box, warn) {
    const rows = await m.query<Array<{ name: string; config: ProviderConfig; secret: string | null }>>(`SELECT "name", "config", "secret" FROM "providers"`);
    const active = await m.query<Array<{ value: unknown }>>(`SELECT "value" FROM "kernel_values" WHERE "store" = 'providers' AND "key" = 'active'`);
    const mode = await m.query<Array<{ value: unknown }>>(`SELECT "value" FROM "kernel_values" WHERE "store" = 'providers' AND "key" = 'mode'`);
    const providers = Object.create(null) as Record<string, ProviderConfig>;
    for (const r of rows) {
      let secret: Secret = {};
      if (r.secret !== null) {
        try {
          if (!box) throw new Error('this instance has no usable data/kernel.key');
          secret = JSON.parse(box.open(r.secret, providerContext(r.name))) as Secret;
        } catch (err) {
          // Left out rather than listed without its key: an edit would otherwise store it keyless.
          warn(`the provider ${r.name} in the shared database is left out: its stored key cannot be read (${(err as Error).message})`);
          continue;
        }
      }
      providers[r.name] = { ...r.config, ...secret, name: r.name };
    }
    const stored = mode[0]?.value;
    if (stored !== undefined && !isAccessMode(stored))
      warn('the default access mode stored in the shared database is not vault, computer or web: computer applies');
    return { version: 1, active: typeof active[0]?.value === 'string' ? active[0].value : null, providers, ...(isAccessMode(stored) ? { mode: stored } : {}) };
  },
};

/**
 * The box to seal with, once the database agrees: the first key to seal a secret is recorded, and an
 * instance with another key (it made its own before it had a copy) is refused, so the instances never
 * end up with keys sealed under two files that each reads only half of.
 */
async function agreedBox(m: EntityManager, box: SecretBox | null): Promise<SecretBox> {
  if (!box) return noBox();
  await m.query(`INSERT INTO "kernel_values" ("store", "key", "value") VALUES ('providers', 'keyId', to_jsonb($1::text)) ON CONFLICT DO NOTHING`, [box.keyId]);
  const recorded = await m.query<Array<{ value: unknown }>>(`SELECT "value" FROM "kernel_values" WHERE "store" = 'providers' AND "key" = 'keyId'`);
  if (recorded[0]?.value !== box.keyId)
    throw new MemoError(
      'CONFLICT',
      `A provider key cannot be stored: the shared database's provider keys are sealed with key ${String(recorded[0]?.value)}, and this instance's data/kernel.key is another; copy kernel.key from an instance that has it.`,
    );
  return box;
}

async function putProvider(m: EntityManager, box: SecretBox | null, config: ProviderConfig): Promise<void> {
  const { apiKey, headers, ...plain } = config;
  const secret: Secret = { ...(apiKey ? { apiKey } : {}), ...(headers && Object.keys(headers).length ? { headers } : {}) };
  const sealed = Object.keys(secret).length ? (await agreedBox(m, box)).seal(JSON.stringify(secret), providerContext(config.name)) : null;
  await m.query(
    `INSERT INTO "providers" ("name", "config", "secret") VALUES ($1, $2::jsonb, $3) ON CONFLICT ("name") DO UPDATE SET "config" = EXCLUDED."config", "secret" = EXCLUDED."secret"`,
    [config.name, JSON.stringify(plain), sealed],
  );
}

export const providerWrites = {
  /** Adds or replaces one provider; it becomes active when none is. */
  put:
    (config: ProviderConfig): RemoteChange =>
    async (m, box) => {
      await putProvider(m, box, config);
      await m.query(
        `INSERT INTO "kernel_values" ("store", "key", "value") VALUES ('providers', 'active', to_jsonb($1::text)) ON CONFLICT ("store", "key") DO UPDATE SET "value" = EXCLUDED."value" WHERE "kernel_values"."value" = 'null'::jsonb`,
        [config.name],
      );
    },
  /** Removes one; if it was the active one, the first remaining (by name) becomes active. */
  remove:
    (name: string): RemoteChange =>
    async (m) => {
      await m.query(`DELETE FROM "providers" WHERE "name" = $1`, [name]);
      const active = await m.query<Array<{ value: unknown }>>(`SELECT "value" FROM "kernel_values" WHERE "store" = 'providers' AND "key" = 'active'`);
      if (active[0]?.value !== name) return;
      const first = await m.query<Array<{ name: string }>>(`SELECT "name" FROM "providers" ORDER BY "name" LIMIT 1`);
      await putValue(m, 'providers', 'active', first[0]?.name ?? null);
    },
  use:
    (name: string): RemoteChange =>
    async (m) => {
      const exists = await m.query<unknown[]>(`SELECT 1 FROM "providers" WHERE "name" = $1`, [name]);
      if (!exists.length) throw new MemoError('NOT_FOUND', `There is no provider "${name}" (another instance removed it).`);
      await putValue(m, 'providers', 'active', name);
    },
  /** The access mode chats use unless one is chosen. */
  mode:
    (mode: AccessMode): RemoteChange =>
    (m) =>
      putValue(m, 'providers', 'mode', mode),
  /** The whole store, as the file held it (the one-time copy). */
  all:
    (shape: ProviderShape): RemoteChange =>
    async (m, box) => {
      for (const config of Object.values(shape.providers)) await putProvider(m, box, config);
      if (shape.active) await putValue(m, 'providers', 'active', shape.active);
      if (shape.mode) await putValue(m, 'providers', 'mode', shape.mode);
    },
};

// --- settings ------------------------------------------------------------------------------------

export function isAccessMode(value: unknown): value is AccessMode {
  return value === 'vault' || value === 'computer' || value === 'web';
}

export function isRateLimit(value: unknown): value is RateLimitSetting {
  return value === 'off' || (typeof value === 'number' && Number.isInteger(value) && value >= 1);
}

export function isSandboxSetting(value: unknown): value is SandboxSetting {
  return value === 'refuse' || value === 'judged';
}

export const settingsTable: StoreTable<Settings> = {
  name: 'settings',
  empty: () => ({}),
  async load(m, _box, warn) {
    const rows = await m.query<Array<{ key: string; value: unknown }>>(`SELECT "key", "value" FROM "kernel_values" WHERE "store" = 'settings'`);
    const out: Settings = {};
    for (const r of rows) {
      if (r.key === 'sandbox') {
        if (isSandboxSetting(r.value)) out.sandbox = r.value;
        else warn('the sandbox setting stored in the shared database is neither "refuse" nor "judged": commands are refused where the OS sandbox cannot start');
        continue;
      }
      if (r.key === 'mcpTokens') {
        if (isTokens(r.value)) out.mcpTokens = r.value;
        else warn('the MCP client tokens stored in the shared database are not well-formed: none of them is accepted');
        continue;
      }
      if (r.key === 'mcpProfiles') {
        if (isProfiles(r.value)) out.mcpProfiles = r.value;
        else warn('the MCP profiles stored in the shared database are not well-formed: only the built-in profiles apply');
        continue;
      }
      if (r.key !== 'rateLimit') continue;
      if (isRateLimit(r.value)) out.rateLimit = r.value;
      else warn('the rate limit stored in the shared database is neither "off" nor a whole number of at least 1: the default applies');
    }
    return out;
  },
};

export const settingsWrites = {
  rateLimit:
    (value: RateLimitSetting | undefined): RemoteChange =>
    async (m) => {
      if (value === undefined) await m.query(`DELETE FROM "kernel_values" WHERE "store" = 'settings' AND "key" = 'rateLimit'`);
      else await putValue(m, 'settings', 'rateLimit', value);
    },
  mcpTokens:
    (value: Record<string, McpTokenSetting>): RemoteChange =>
    async (m) => {
      if (Object.keys(value).length === 0) await m.query(`DELETE FROM "kernel_values" WHERE "store" = 'settings' AND "key" = 'mcpTokens'`);
      else await putValue(m, 'settings', 'mcpTokens', value);
    },
  mcpProfiles:
    (value: Record<string, McpProfileSetting>): RemoteChange =>
    async (m) => {
      if (Object.keys(value).length === 0) await m.query(`DELETE FROM "kernel_values" WHERE "store" = 'settings' AND "key" = 'mcpProfiles'`);
      else await putValue(m, 'settings', 'mcpProfiles', value);
    },
  sandbox:
    (value: SandboxSetting | undefined): RemoteChange =>
    async (m) => {
      if (value === undefined) await m.query(`DELETE FROM "kernel_values" WHERE "store" = 'settings' AND "key" = 'sandbox'`);
      else await putValue(m, 'settings', 'sandbox', value);
    },
};
