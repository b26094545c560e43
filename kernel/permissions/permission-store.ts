import { MemoError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { KernelStateDb, ReplicatedView } from '../storage/kernel-state-db.js';
import { isExternalWrites, permissionsTable, permissionWrites } from '../state/kernel-state-tables.js';
import { JsonFileStore } from '../util/json-file-store.js';
import type { DecisionScope, ExternalWritesSetting, PermissionShape, StoredDecision } from '../state/shapes.js';

export type { ExternalWritesSetting, PermissionShape, StoredDecision };

const EXTERNAL_OFF: ExternalWritesSetting = { all: false, clients: [] };

/**
 * Stored decisions in `data/permissions.json`, a JsonFileStore: written atomically, re-read
 * whenever the file changes on disk (so `memo permissions revoke` in another process applies to a
 * running kernel at its next call). A corrupt or unreadable file is reported once and treated as
 * "no decisions" (never as allow, always-allow off); it is moved aside, not overwritten, when the
 * next decision is saved. A version 1 file (forever decisions by tool) is read as forever decisions.
 *
 * With a shared database (`db`: MEMO_DATABASE_URL), the decisions are rows of memo_kernel instead
 * (kernel-state-db.ts): read from the view in memory, written through, re-read when another
 * instance changes them. Until the first read, every question the store is asked is refused (a
 * stored deny might be unknown); while the view is stale (the database has not confirmed it for
 * STALE_MS), stored denies still apply and stored allows and always-allow do not: a revocation on
 * another instance is never missed for longer than that.
 */
export class PermissionStore {
  private readonly store: JsonFileStore<PermissionShape> | null = null;
  private readonly shared: ReplicatedView<PermissionShape> | null = null;
  private staleReported = false;

  constructor(
    readonly file: string,
    private readonly logger: Logger,
    private readonly db?: KernelStateDb,
  ) {
    if (db) {
      this.shared = db.view(permissionsTable);
      return;
    }
    this.store = new JsonFileStore<PermissionShape>({
      file,
      logger,
      empty: () => ({ version: 2, alwaysAllow: false, decisions: [] }),
      parse: parseFile,
      whileUnusable: 'stored permissions are ignored (nothing is allowed by them, always-allow is off)',
    });
  }

  /** Why the stored decisions cannot be used, if they cannot. */
  get problem(): string | null {
    if (this.shared) return this.shared.loaded ? null : `the stored permissions in ${this.db!.where} have not been read yet`;
    return this.store!.problem;
  }

  /** Resolves once the decisions can be read (at once for the file; the first read of the database). */
  ready(): Promise<void> {
    return this.db ? this.db.ready() : Promise.resolve();
  }

  /** Resolves once every change made here is saved (at once for the file); rejects saying why one was not. */
  saved(): Promise<void> {
    return this.shared ? this.shared.saved() : Promise.resolve();
  }

  private read(): PermissionShape {
    return this.shared ? this.shared.read() : this.store!.read();
  }

  private change(local: (shape: PermissionShape) => void, remote: Parameters<ReplicatedView<PermissionShape>['change']>[1]): void {
    if (this.shared) return this.shared.change(local, remote);
    // A copy: a write that fails leaves the value held as it was.
    this.store!.update((shape) => {
      const next = structuredClone(shape);
      local(next);
      return next;
    });
  }

  /** False (with a warning, once per episode) while the shared view is stale: stored allows do not apply then. */
  private allowsApply(): boolean {
    if (!this.shared) return true;
    if (!this.shared.loaded) {
      throw new MemoError(
        'PERMISSION_DENIED',
        `The stored permissions have not been read from ${this.db!.where} yet, so a stored deny could be missed: medium and dangerous calls are refused until they are.`,
        { details: { decision: 'deny:unavailable' } },
      );
    }
    if (this.shared.fresh()) {
      this.staleReported = false;
      return true;
    }
    if (!this.staleReported) {
      this.staleReported = true;
      this.logger.warn(
        `the stored permissions in ${this.db!.where} have not been confirmed for ${Math.round(this.shared.age() / 1000)} s: stored allows and always-allow do not apply until the database answers (stored denies still do)`,
      );
    }
    return false;
  }

  /** Whether a stored deny for every caller (forever or timed) is in force for `tool` at `now`: the check a safe tool's call gets. */
  denies(tool: string, now: number): boolean {
    return this.read().decisions.some((d) => d.tool === tool && d.decision === 'deny' && d.scope !== 'conversation' && inForce(d, now));
  }

  /** The decisions in force for a tool at `now`: a deny, else the allows (expired ones left out). */
  find(tool: string, now: number, conversationId?: string): { deny?: StoredDecision; allow?: StoredDecision } {
    const allows = this.allowsApply();
    const live = this.read().decisions.filter((d) => d.tool === tool && inForce(d, now));
    const deny = live.find((d) => d.decision === 'deny');
    if (deny) return { deny };
    if (!allows) return {};
    // The narrowest allow names the decision: this conversation, a timed one, then forever.
    const allow =
      live.find((d) => d.decision === 'allow' && d.scope === 'conversation' && d.conversationId === conversationId) ??
      live.find((d) => d.decision === 'allow' && d.scope === 'until') ??
      live.find((d) => d.decision === 'allow' && d.scope === 'forever');
    return allow ? { allow } : {};
  }

  /** Every decision still in force at `now` (or every one stored, with `now` omitted), by tool. */
  list(now?: number): StoredDecision[] {
    return this.read()
      .decisions.filter((d) => now === undefined || inForce(d, now))
      .sort((a, b) => a.tool.localeCompare(b.tool) || a.scope.localeCompare(b.scope));
  }

  /** Stores a decision, replacing the tool's decision of the same scope (and conversation); drops expired ones while at it. */
  set(decision: Omit<StoredDecision, 'at'>, at: Date): void {
    const now = at.getTime();
    const entry: StoredDecision = { ...decision, at: at.toISOString() };
    this.change(
      (shape) => void (shape.decisions = [...shape.decisions.filter((d) => inForce(d, now) && !sameSlot(d, entry)), { ...entry }]),
      permissionWrites.set(entry, now),
    );
  }

  /** Removes a tool's stored decisions (every scope); false if there were none. */
  revoke(tool: string): boolean {
    if (!this.read().decisions.some((d) => d.tool === tool)) return false;
    this.change((shape) => void (shape.decisions = shape.decisions.filter((d) => d.tool !== tool)), permissionWrites.revoke(tool));
    return true;
  }

  /** Forgets a conversation's decisions (it was deleted: "nothing survives it"). */
  forgetConversation(conversationId: string): void {
    if (!this.read().decisions.some((d) => d.conversationId === conversationId)) return;
    this.change(
      (shape) => void (shape.decisions = shape.decisions.filter((d) => d.conversationId !== conversationId)),
      permissionWrites.forgetConversation(conversationId),
    );
  }

  get alwaysAllow(): boolean {
    if (this.shared && !(this.shared.loaded && this.shared.fresh())) return false;
    return this.read().alwaysAllow;
  }

  /** The person's global setting; only the CLI and host apps set it, never a tool. */
  setAlwaysAllow(on: boolean): void {
    this.change((shape) => void (shape.alwaysAllow = on), permissionWrites.alwaysAllow(on));
  }

  /** Whether external MCP clients may ask for writes: off for all while the shared view is stale or unread (fail closed). */
  get externalWrites(): ExternalWritesSetting {
    if (this.shared && !(this.shared.loaded && this.shared.fresh())) return EXTERNAL_OFF;
    const setting = this.read().externalWrites;
    return setting ? { all: setting.all, clients: [...setting.clients] } : EXTERNAL_OFF;
  }

  /** Whether an external client declaring `client` (its clientInfo name) may ask for a write. */
  externalWritesFor(client: string | undefined): boolean {
    const setting = this.externalWrites;
    return setting.all || (client !== undefined && setting.clients.includes(client));
  }

  /**
   * Turns external writes on or off, for every external client (`client` omitted: off also clears
   * the named clients) or for one declared client name. A person's choice: never settable through a
   * tool. Returns the setting now in force.
   */
  setExternalWrites(on: boolean, client?: string): ExternalWritesSetting {
    const now = this.externalWrites;
    const next: ExternalWritesSetting =
      client === undefined
        ? { all: on, clients: on ? now.clients : [] }
        : { all: now.all, clients: on ? [...new Set([...now.clients, client])] : now.clients.filter((c) => c !== client) };
    this.change((shape) => void (shape.externalWrites = next), permissionWrites.externalWrites(next));
    return next;
  }
}

function inForce(d: StoredDecision, now: number): boolean {
  return d.scope !== 'until' || (d.expiresAt !== undefined && Date.parse(d.expiresAt) > now);
}

function sameSlot(a: StoredDecision, b: StoredDecision): boolean {
  return a.tool === b.tool && a.scope === b.scope && a.conversationId === b.conversationId;
}

const SCOPES: readonly DecisionScope[] = ['forever', 'until', 'conversation'];

/** The decisions of a parsed file; throws saying what is wrong. One bad entry spoils the file: none of it is used. */
function parseFile(json: unknown): PermissionShape {
  const raw = json as { version?: unknown; alwaysAllow?: unknown; decisions?: unknown } | null;
  if (!raw || typeof raw !== 'object') throw new Error('is not a JSON object');
  if (raw.version === 1 || raw.version === undefined) {
    // Version 1: { decisions: { tool: { decision, plugin, at } } }, each a forever decision.
    const decisions = raw.decisions;
    if (!decisions || typeof decisions !== 'object' || Array.isArray(decisions)) throw new Error('does not have a "decisions" object');
    const out: StoredDecision[] = [];
    for (const [tool, d] of Object.entries(decisions as Record<string, { decision?: unknown; plugin?: unknown; at?: unknown }>)) {
      if (!d || (d.decision !== 'allow' && d.decision !== 'deny')) throw new Error(`has an invalid entry for "${tool}"`);
      out.push({
        tool,
        decision: d.decision,
        plugin: typeof d.plugin === 'string' ? d.plugin : null,
        at: typeof d.at === 'string' ? d.at : '',
        scope: 'forever',
      });
    }
    return { version: 2, alwaysAllow: false, decisions: out };
  }
  if (raw.version !== 2) throw new Error(`has version ${JSON.stringify(raw.version)}, which this kernel does not know`);
  if (!Array.isArray(raw.decisions)) throw new Error('does not have a "decisions" list');
  const out: StoredDecision[] = [];
  raw.decisions.forEach((d: Partial<StoredDecision> | null, i: number) => {
    const where = `decision ${i + 1}`;
    if (!d || typeof d.tool !== 'string' || !d.tool) throw new Error(`has no tool in ${where}`);
    if (d.decision !== 'allow' && d.decision !== 'deny') throw new Error(`has an invalid decision in ${where} (${d.tool})`);
    if (!SCOPES.includes(d.scope as DecisionScope)) throw new Error(`has an invalid scope in ${where} (${d.tool})`);
    if (d.scope === 'until' && (typeof d.expiresAt !== 'string' || Number.isNaN(Date.parse(d.expiresAt))))
      throw new Error(`has no valid expiresAt in ${where} (${d.tool})`);
    if (d.scope === 'conversation' && (typeof d.conversationId !== 'string' || !d.conversationId))
      throw new Error(`has no conversationId in ${where} (${d.tool})`);
    out.push({
      tool: d.tool,
      decision: d.decision,
      plugin: typeof d.plugin === 'string' ? d.plugin : null,
      at: String(d.at ?? ''),
      scope: d.scope!,
      ...(d.scope === 'until' ? { expiresAt: d.expiresAt! } : {}),
      ...(d.scope === 'conversation' ? { conversationId: d.conversationId! } : {}),
    });
  });
  const external = (raw as { externalWrites?: unknown }).externalWrites;
  if (external !== undefined && !isExternalWrites(external)) throw new Error('has an "externalWrites" that is not {"all": true|false, "clients": [names]}');
  return { version: 2, alwaysAllow: raw.alwaysAllow === true, decisions: out, ...(external ? { externalWrites: external } : {}) };
}
