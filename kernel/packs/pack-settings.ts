import type { Logger } from '../logger.js';
import type { JsonSchema } from '../tools/contract.js';
import { describeAjvErrors } from '../tools/tool-registry.js';
import { applyDefaults, SchemaCompiler } from '../tools/schemas.js';
import { JsonFileStore } from '../util/json-file-store.js';
import { MemoError } from '../errors.js';

interface PackEntry {
  enabled?: boolean;
  config?: Record<string, unknown>;
}

interface FileShape {
  version: 1;
  packs: Record<string, PackEntry>;
}

/**
 * The administrator's choices per pack, in `data/packs.json`: enabled or not, and settings. A
 * JsonFileStore: written atomically, re-read when the file changes, so a `memo plugins disable` from
 * another process reaches a running kernel. An unreadable file is reported and treated as "no
 * choices" (every pack with its defaults); the next change moves it aside.
 */
export class PackSettings {
  private readonly store: JsonFileStore<FileShape>;

  constructor(
    readonly file: string,
    logger: Logger,
  ) {
    this.store = new JsonFileStore<FileShape>({
      file,
      logger,
      empty: () => ({ version: 1, packs: Object.create(null) as Record<string, PackEntry> }),
      parse: (json) => {
        const packs = (json as Partial<FileShape> | null)?.packs;
        if (!packs || typeof packs !== 'object' || Array.isArray(packs)) throw new Error('has no "packs" object');
        return { version: 1, packs: Object.assign(Object.create(null) as Record<string, PackEntry>, packs) };
      },
      whileUnusable: 'every pack runs with its defaults',
    });
  }

  /** Why the file could not be used, if it could not. */
  get problem(): string | null {
    return this.store.problem;
  }

  /** Re-reads the file if it changed; true if it did. */
  refresh(): boolean {
    return this.store.reload();
  }

  private get entries(): Record<string, PackEntry> {
    return this.store.read().packs;
  }

  isEnabled(id: string, enabledByDefault = true): boolean {
    return this.entries[id]?.enabled ?? enabledByDefault;
  }

  /** The stored choice, or undefined if the administrator made none. */
  storedEnabled(id: string): boolean | undefined {
    return this.entries[id]?.enabled;
  }

  setEnabled(id: string, enabled: boolean): void {
    this.store.update((shape) => void (shape.packs[id] = { ...shape.packs[id], enabled }));
  }

  storedConfig(id: string): Record<string, unknown> {
    return { ...(this.entries[id]?.config ?? {}) };
  }

  /** Validates the merged settings against the pack's schema and saves them; VALIDATION with the schema's reason otherwise. */
  setConfig(id: string, schema: JsonSchema | undefined, changes: Record<string, unknown>): Record<string, unknown> {
    if (!schema) throw new MemoError('VALIDATION', `Pack "${id}" declares no settings.`, { plugin: id });
    const merged = { ...this.storedConfig(id), ...changes };
    const resolved = resolveConfig(id, schema, merged);
    this.store.update((shape) => void (shape.packs[id] = { ...shape.packs[id], config: merged }));
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
  const validate = schemas.compile(schema);
  const copy = structuredClone(values);
  applyDefaults(schema, copy);
  if (!validate(copy)) {
    throw new MemoError('VALIDATION', `Invalid settings for pack "${id}": ${describeAjvErrors(validate.errors).join('; ')}.`, {
      plugin: id,
      details: { problems: describeAjvErrors(validate.errors) },
    });
  }
  return copy;
}
