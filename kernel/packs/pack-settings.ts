import type { Logger } from '../logger.js';
import type { JsonSchema } from '../tools/contract.js';
import { describeAjvErrors } from '../tools/tool-registry.js';
import { applyDefaults, plainlySatisfies, SchemaCompiler } from '../tools/schemas.js';
import { JsonFileStore } from '../util/json-file-store.js';
import { MemoError } from '../errors.js';
import type { Disposable } from '../disposable.js';
import type { KernelStateDb, RemoteChange, ReplicatedView } from '../storage/kernel-state-db.js';
import { packsTable, packWrites } from '../state/kernel-state-tables.js';
import type { PackEntry, PackShape } from '../state/shapes.js';

export type { PackEntry, PackShape };

/**
 * The administrator's choices per pack, in `data/packs.json`: enabled or not, and settings. A
 * JsonFileStore: written atomically, re-read when the file changes, so a `memo plugins disable` from
 * another process reaches a running kernel. An unreadable file is reported and treated as "no
 * choices" (every pack with its defaults); the next change moves it aside.
 */
export class PackSettings {
  private readonly store: JsonFileStore<PackShape> | null = null;
  /** With a shared database (MEMO_DATABASE_URL): a row per pack in memo_kernel, read from memory, written through. */
  private readonly shared: ReplicatedView<PackShape> | null = null;
  private seen = -1;

  constructor(
    readonly file: string,
    logger: Logger,
    private readonly db?: KernelStateDb,
  ) {
    if (db) {
      this.shared = db.view(packsTable);
      return;
    }
    this.store = new JsonFileStore<PackShape>({
      file,
      logger,
      empty: () => ({ version: 1, packs: Object.create(null) as Record<string, PackEntry> }),
      parse: (json) => {
        const packs = (json as Partial<PackShape> | null)?.packs;
        if (!packs || typeof packs !== 'object' || Array.isArray(packs)) throw new Error('has no "packs" object');
        return { version: 1, packs: Object.assign(Object.create(null) as Record<string, PackEntry>, packs) };
      },
      whileUnusable: 'every pack runs with its defaults',
    });
  }

  /** Why the file could not be used, if it could not. */
  get problem(): string | null {
    if (this.shared) return this.shared.loaded ? null : `the pack settings in ${this.db!.where} have not been read yet`;
    return this.store!.problem;
  }

  /** Resolves once the choices can be read (at once for the file; the first read of the database). */
  ready(): Promise<void> {
    return this.db ? this.db.ready() : Promise.resolve();
  }

  /** Resolves once every change made here is saved (at once for the file); rejects saying why one was not. */
  saved(): Promise<void> {
    return this.shared ? this.shared.saved() : Promise.resolve();
  }

  /** Re-reads the file if it changed; true if it did (shared: true if the view changed since the last call). */
  refresh(): boolean {
    if (!this.shared) return this.store!.reload();
    const changed = this.shared.version !== this.seen;
    this.seen = this.shared.version;
    return changed;
  }

  /** Told when another instance's change reaches the shared view (the file is polled by the pack manager instead). */
  onChange(listener: () => void): Disposable {
    return this.shared ? this.shared.onChange(listener) : { dispose: () => {} };
  }

  private get entries(): Record<string, PackEntry> {
    return (this.shared ? this.shared.read() : this.store!.read()).packs;
  }

  /** Every pack's stored choices, by pack id. */
  stored(): Array<[string, PackEntry]> {
    return Object.entries(this.entries).map(([id, entry]) => [id, structuredClone(entry)]);
  }

  private change(local: (shape: PackShape) => void, remote: RemoteChange): void {
    if (this.shared) return this.shared.change(local, remote);
    this.store!.update(local);
  }

  isEnabled(id: string, enabledByDefault = true): boolean {
    return this.entries[id]?.enabled ?? enabledByDefault;
  }

  /** The stored choice, or undefined if the administrator made none. */
  storedEnabled(id: string): boolean | undefined {
    return this.entries[id]?.enabled;
  }

  setEnabled(id: string, enabled: boolean): void {
    this.change((shape) => void (shape.packs[id] = { ...shape.packs[id], enabled }), packWrites.enabled(id, enabled));
  }

  storedConfig(id: string): Record<string, unknown> {
    return { ...(this.entries[id]?.config ?? {}) };
  }

  /** Validates the merged settings against the pack's schema and saves them; VALIDATION with the schema's reason otherwise. */
  setConfig(id: string, schema: JsonSchema | undefined, changes: Record<string, unknown>): Record<string, unknown> {
    if (!schema) throw new MemoError('VALIDATION', `Pack "${id}" declares no settings.`, { plugin: id });
    const merged = { ...this.storedConfig(id), ...changes };
    const resolved = resolveConfig(id, schema, merged);
    this.change((shape) => void (shape.packs[id] = { ...shape.packs[id], config: { ...shape.packs[id]?.config, ...changes } }), packWrites.config(id, changes));
    return resolved;
  }
}

/** Settings schemas of packs loaded without a kernel at hand (the CLI's `plugins config`, the pack manager). */
const configSchemas = new SchemaCompiler();

/** Applies the schema's defaults and validates; throws VALIDATION naming each problem. */
export function resolveConfig(
  id: string,
  schema: JsonSchema | undefined,
  values: Record<string, unknown>,
  schemas: SchemaCompiler = configSchemas,
): Record<string, unknown> {
  if (!schema) return { ...values };
  const copy = structuredClone(values);
  applyDefaults(schema, copy);
  // Plain settings that plainly pass need no compiled validator (a start loads several packs' settings);
  // anything else, and every failure, is compiled and reported by Ajv.
  if (plainlySatisfies(schema, copy)) return copy;
  const validate = schemas.compile(schema);
  if (!validate(copy)) {
    throw new MemoError('VALIDATION', `Invalid settings for pack "${id}": ${describeAjvErrors(validate.errors).join('; ')}.`, {
      plugin: id,
      details: { problems: describeAjvErrors(validate.errors) },
    });
  }
  return copy;
}
