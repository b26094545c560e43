/**
 * A person's changes to what the kernel may do, on the record: enabling, disabling and configuring
 * packs, stored permission decisions, always-allow, providers, the MCP token, calendar consent.
 * Each is written to the audit trail (an `admin` event line, chained like a call's line, on a file or
 * on PostgreSQL) before it is made, naming the face it came through (`cli`, `console`, `host`); a
 * change whose line cannot be written is not made, and one that fails after its line was written gets
 * a second line saying so. Secrets in what changed (a provider's key) are masked on the line.
 *
 * In a process with a kernel (the console, a host app) the changes go through `kernel.admin`
 * (AdminActions); the CLI, which edits the stores of a data folder directly, writes the same line
 * with `recordAdmin` on the folder's own trail first (kernel/cli/admin-record.ts).
 */
import { writeFailureCause, type AdminRecord } from '../audit/audit-record.js';
import { maskArgs } from '../secrets/masking.js';
import type { KnownSecrets } from '../secrets/known-secrets.js';
import { MemoError } from '../errors.js';
import { isClientName } from '../util/mcp-settings.js';
import type { AuditSink } from '../audit/audit-sink.js';
import type { ExternalWritesSetting, PermissionStore, StoredDecision } from '../permissions/permission-store.js';
import type { PackManager } from '../packs/pack-manager.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { ProviderSettings } from '../providers/provider-settings.js';
import type { ProviderConfig } from '../providers/provider.js';
import type { AccessMode, ToolSpec } from '../tools/contract.js';
import type { Clock } from '../clock.js';
import { askedEveryTimeMessage, standingAllow } from '../permissions/standing-rules.js';
import { withDidYouMean } from '../util/did-you-mean.js';

export type { AdminRecord };

/** What an admin line's sentence calls the change (`pack.disable shell`). */
function named(record: AdminRecord): string {
  return `${record.action}${record.target !== undefined ? ` ${record.target}` : ''}`;
}

/**
 * Writes one admin line on `sink` (values under secret-looking names, secret-shaped values and the
 * kernel's known secrets masked). Throws PERMISSION_DENIED (decision `deny:audit-unavailable`) when
 * it cannot be written: the change must not be made then. A sink without `admin` (a host's own that
 * predates it) records nothing, and the change goes ahead.
 */
export async function recordAdmin(sink: AuditSink, record: AdminRecord, known?: KnownSecrets): Promise<void> {
  if (!sink.admin) return;
  let line: AdminRecord = { ...record };
  if (record.change) {
    const masked = maskArgs(record.change).masked as Record<string, unknown>;
    line.change = known ? known.scrubValue(masked) : masked;
  }
  if (record.error !== undefined) line = { ...line, error: known ? known.scrub(record.error) : record.error };
  try {
    await sink.admin(line);
  } catch (err) {
    throw new MemoError(
      'PERMISSION_DENIED',
      `${named(record)} was not done: its audit line could not be written (${writeFailureCause(err)}). A change is made only once it is on the record.`,
      { details: { decision: 'deny:audit-unavailable' } },
    );
  }
}

/**
 * Records `record`, then makes the change; if making it fails, a second line (`outcome: 'failed'`)
 * says so (best effort: the first line is already there) and the error is thrown on.
 */
export async function recorded<R>(sink: AuditSink, record: AdminRecord, apply: () => R | Promise<R>, known?: KnownSecrets): Promise<R> {
  await recordAdmin(sink, record, known);
  try {
    return await apply();
  } catch (err) {
    await recordAdmin(sink, { ...record, outcome: 'failed', error: String((err as Error)?.message ?? err).slice(0, 500) }, known).catch(() => {});
    throw err;
  }
}

/** The parts of a kernel the admin actions change. */
export interface AdminTargets {
  audit: AuditSink;
  permissions: PermissionStore;
  packs: PackManager;
  registry: ToolRegistry;
  providerSettings: ProviderSettings;
  known?: KnownSecrets;
  /** What a decision's time and expiry are taken from (the kernel's clock; default the system's). */
  clock?: Clock;
}

/**
 * A person's changes made in a process that has a kernel (the console, a host app): each recorded in
 * the kernel's audit trail before it is made (see recorded). `by` names the face (`host` when a host
 * app calls these itself). Changing the stores directly still works, unrecorded: faces use these.
 */
export class AdminActions {
  constructor(private readonly k: AdminTargets) {}

  /** Writes an admin line for a change made elsewhere (a pack's own command: calendar consent, a WhatsApp unlink). */
  record(record: AdminRecord): Promise<void> {
    return recordAdmin(this.k.audit, record, this.k.known);
  }

  /** A pack found in a folder (loaded or not) or registered by the host. */
  private knownPack(id: string): boolean {
    return this.k.packs.get(id) !== undefined || this.k.registry.pack(id) !== undefined;
  }

  private run<R>(record: AdminRecord, apply: () => R | Promise<R>): Promise<R> {
    return recorded(this.k.audit, record, apply, this.k.known);
  }

  /** Enables or disables a pack (its tools appear or disappear at once); resolves once the choice is stored. */
  setPackEnabled(id: string, enabled: boolean, by = 'host'): Promise<void> {
    if (!this.knownPack(id)) return Promise.reject(new MemoError('NOT_FOUND', `There is no pack "${id}".`));
    return this.run({ action: enabled ? 'pack.enable' : 'pack.disable', by, target: id }, async () => {
      this.k.packs.setEnabled(id, enabled);
      await this.k.packs.saved();
    });
  }

  /** Validates and stores new settings for a pack; resolves with the settings in force. */
  configurePack(id: string, changes: Record<string, unknown>, by = 'host'): Promise<Readonly<Record<string, unknown>>> {
    if (!this.knownPack(id)) return Promise.reject(new MemoError('NOT_FOUND', `There is no pack "${id}".`));
    return this.run({ action: 'pack.config', by, target: id, change: changes }, async () => {
      const config = this.k.packs.setConfig(id, changes);
      await this.k.packs.saved();
      return config;
    });
  }

  /** Stores an allow or deny decision for a tool. */
  decide(decision: Omit<StoredDecision, 'at'>, at: Date, by = 'host'): Promise<void> {
    const { tool, decision: verdict, ...rest } = decision;
    return this.run({ action: verdict === 'allow' ? 'permission.allow' : 'permission.deny', by, target: tool, change: { ...rest } }, async () => {
      this.k.permissions.set(decision, at);
      await this.k.permissions.saved();
    });
  }

  /**
   * Allows a medium or dangerous tool ahead of time for every caller (`minutes`: for that long, else
   * until revoked), as `memo permissions allow` does and with its limits (standing-rules.ts): NOT_FOUND
   * for no such tool, VALIDATION for a safe one (nothing to store) and for one asked every time.
   */
  async allow(tool: string, minutes: number | undefined, by = 'host'): Promise<void> {
    const at = new Date(this.k.clock?.now() ?? Date.now());
    const spec = this.known(tool);
    const rule = standingAllow(spec.spec);
    if (rule.kind === 'safe') throw new MemoError('VALIDATION', `${tool} is safe: it runs without asking already. Nothing was stored.`);
    if (rule.kind === 'asked-every-time') throw new MemoError('VALIDATION', `${askedEveryTimeMessage(tool, rule.why)}.`);
    if (minutes !== undefined && !(Number.isInteger(minutes) && minutes >= 1 && minutes <= 525_600))
      throw new MemoError('VALIDATION', 'minutes must be a whole number from 1 to 525600 (a year), or left out for until revoked.');
    const expiresAt = minutes === undefined ? undefined : new Date(at.getTime() + minutes * 60_000).toISOString();
    await this.decide({ tool, decision: 'allow', plugin: spec.pack.id, scope: expiresAt ? 'until' : 'forever', ...(expiresAt ? { expiresAt } : {}) }, at, by);
  }

  /** Denies a tool for every caller until revoked, as `memo permissions deny` does (NOT_FOUND for no such tool). */
  async deny(tool: string, by = 'host'): Promise<void> {
    const at = new Date(this.k.clock?.now() ?? Date.now());
    const spec = this.known(tool);
    await this.decide({ tool, decision: 'deny', plugin: spec.pack.id, scope: 'forever' }, at, by);
  }

  /** A tool of a loaded pack or skill (disabled ones included), or NOT_FOUND. */
  private known(tool: string): { spec: ToolSpec; pack: { id: string } } {
    const all = this.k.registry.list({ includeDisabled: true });
    const found = this.k.registry.get(tool) ?? all.find((t) => t.spec.name === tool);
    if (!found)
      throw new MemoError(
        'NOT_FOUND',
        withDidYouMean(
          `There is no tool named ${tool} (the Tools page lists them).`,
          tool,
          all.map((t) => t.spec.name),
        ),
      );
    return found;
  }

  /** Removes a tool's stored decisions; false (and no line) when it had none. */
  async revoke(tool: string, by = 'host'): Promise<boolean> {
    const had = this.k.permissions.list().filter((d) => d.tool === tool);
    if (had.length === 0) return false;
    return this.run({ action: 'permission.revoke', by, target: tool, change: { scopes: had.map((d) => d.scope) } }, async () => {
      const revoked = this.k.permissions.revoke(tool);
      await this.k.permissions.saved();
      return revoked;
    });
  }

  /** Turns the global always-allow on or off. */
  setAlwaysAllow(on: boolean, by = 'host'): Promise<void> {
    return this.run({ action: on ? 'always-allow.on' : 'always-allow.off', by }, async () => {
      this.k.permissions.setAlwaysAllow(on);
      await this.k.permissions.saved();
    });
  }

  /**
   * Lets external MCP clients ask for writes (each asked every time), or stops it: for every client
   * (`client` omitted) or one declared client name. Returns the setting now in force.
   */
  setExternalWrites(on: boolean, client: string | undefined, by = 'host'): Promise<ExternalWritesSetting> {
    // Checked before the line is written: a refused change makes no line.
    if (client !== undefined && !isClientName(client))
      return Promise.reject(new MemoError('VALIDATION', 'A client name is 1 to 64 characters without control characters, as the client declares it.'));
    return this.run({ action: on ? 'external-writes.on' : 'external-writes.off', by, ...(client !== undefined ? { target: client } : {}) }, async () => {
      const now = this.k.permissions.setExternalWrites(on, client);
      await this.k.permissions.saved();
      return now;
    });
  }

  /** Adds or replaces a provider configuration (its key masked on the line). */
  putProvider(config: ProviderConfig, by = 'host'): Promise<void> {
    const replaced = this.k.providerSettings.get(config.name) !== undefined;
    return this.run({ action: 'provider.add', by, target: config.name, change: { ...config, ...(replaced ? { replaced: true } : {}) } }, async () => {
      this.k.providerSettings.put(config);
      await this.k.providerSettings.saved();
    });
  }

  /** Removes a provider; false (and no line) when there is none of that name. */
  async removeProvider(name: string, by = 'host'): Promise<boolean> {
    if (!this.k.providerSettings.get(name)) return false;
    return this.run({ action: 'provider.remove', by, target: name }, async () => {
      const removed = this.k.providerSettings.remove(name);
      await this.k.providerSettings.saved();
      return removed;
    });
  }

  /** Stores the access mode chat turns use unless one is chosen (`memo chat --mode M --save-default`, a host). */
  setDefaultMode(mode: AccessMode, by = 'host'): Promise<void> {
    return this.run({ action: 'mode.default', by, target: mode, change: { mode } }, async () => {
      this.k.providerSettings.setDefaultMode(mode);
      await this.k.providerSettings.saved();
    });
  }

  /** Makes a provider the active one (NOT_FOUND, and no line, for an unknown name). */
  useProvider(name: string, by = 'host'): Promise<void> {
    if (!this.k.providerSettings.get(name)) return Promise.reject(new MemoError('NOT_FOUND', `There is no provider "${name}" (memo provider list).`));
    return this.run({ action: 'provider.use', by, target: name }, async () => {
      this.k.providerSettings.use(name);
      await this.k.providerSettings.saved();
    });
  }
}
