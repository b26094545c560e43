import * as fs from 'node:fs';
import type { Logger } from '../logger.js';
import type { JsonSchema } from '../tools/contract.js';
import { describeAjvErrors } from '../tools/tool-registry.js';
import { applyDefaults, SchemaCompiler } from '../tools/schemas.js';
import { fileStamp, writeFileAtomic } from '../util/atomic-file.js';
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
 * The administrator's choices per pack, in `data/packs.json`: enabled or not, and settings.
 * Written atomically; re-read when the file changes, so a `memo plugins disable` from another
 * process reaches a running kernel. An unreadable file is reported and treated as "no choices".
 */
export class PackSettings {
  private entries: Record<string, PackEntry> = {};
  private stamp = '';
  problem: string | null = null;

  constructor(
    readonly file: string,
    private readonly logger: Logger,
  ) {}

  /** Re-reads the file if it changed; true if it did. */
  refresh(): boolean {
    const stamp = fileStamp(this.file);
    if (stamp === this.stamp) return false;
    this.stamp = stamp;
    this.entries = {};
    this.problem = null;
    if (stamp === 'absent') return true;
    try {
      const parsed = JSON.parse(fs.readFileSync(this.file, 'utf8')) as Partial<FileShape>;
      if (!parsed || typeof parsed.packs !== 'object' || parsed.packs === null || Array.isArray(parsed.packs)) throw new Error('it has no "packs" object');
      this.entries = parsed.packs;
    } catch (err) {
      this.problem = `${this.file} cannot be used (${(err as Error).message}); every pack runs with its defaults until it is fixed`;
      this.logger.warn(this.problem);
    }
    return true;
  }

  isEnabled(id: string, enabledByDefault = true): boolean {
    this.refresh();
    return this.entries[id]?.enabled ?? enabledByDefault;
  }

  /** The stored choice, or undefined if the administrator made none. */
  storedEnabled(id: string): boolean | undefined {
    this.refresh();
    return this.entries[id]?.enabled;
  }

  setEnabled(id: string, enabled: boolean): void {
    this.refresh();
    this.entries[id] = { ...this.entries[id], enabled };
    this.save();
  }

  storedConfig(id: string): Record<string, unknown> {
    this.refresh();
    return { ...(this.entries[id]?.config ?? {}) };
  }

  /** Validates the merged settings against the pack's schema and saves them; VALIDATION with the schema's reason otherwise. */
  setConfig(id: string, schema: JsonSchema | undefined, changes: Record<string, unknown>): Record<string, unknown> {
    this.refresh();
    if (!schema) throw new MemoError('VALIDATION', `Pack "${id}" declares no settings.`, { plugin: id });
    const merged = { ...this.storedConfig(id), ...changes };
    const resolved = resolveConfig(id, schema, merged);
    this.entries[id] = { ...this.entries[id], config: merged };
    this.save();
    return resolved;
  }

  private save(): void {
    if (this.problem && fs.existsSync(this.file)) fs.renameSync(this.file, `${this.file}.corrupt-${Date.now()}`);
    this.problem = null;
    writeFileAtomic(this.file, JSON.stringify({ version: 1, packs: this.entries } satisfies FileShape, null, 2) + '\n');
    this.stamp = fileStamp(this.file);
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
