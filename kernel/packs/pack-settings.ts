import type { Logger } from '../logger.js';
import type { JsonSchema } from '../tools/contract.js';
import type { ErrorObject } from 'ajv';
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

/** One problem of invalid settings: `field` is its dotted name (`timeoutMs`, `networkDomains.0`), `key` the setting it is in. */
interface SettingsProblem {
  key: string;
  field: string;
  message: string;
}

/**
 * Ajv's errors for settings, located: what is wrong with each setting, in words taken from the schema
 * (bounds, patterns, the allowed values, the accepted keys), never from the value given, which may
 * be a secret. An unknown key says which keys are accepted.
 */
function settingsProblems(errors: ErrorObject[] | null | undefined, schema: JsonSchema): SettingsProblem[] {
  const out: SettingsProblem[] = [];
  for (const e of errors ?? []) {
    const params = e.params as Record<string, unknown>;
    let pointer = e.instancePath;
    if (e.keyword === 'required') pointer = `${pointer}/${String(params.missingProperty)}`;
    if (e.keyword === 'additionalProperties') pointer = `${pointer}/${String(params.additionalProperty)}`;
    const segments = pointer
      .split('/')
      .slice(1)
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    let message: string;
    if (e.keyword === 'required') message = 'is required';
    else if (e.keyword === 'additionalProperties') {
      const parent = (e.parentSchema ?? (e.instancePath === '' ? schema : undefined)) as { properties?: object } | undefined;
      const accepted = Object.keys(parent?.properties ?? {});
      message = `is not an accepted field${accepted.length ? ` (accepted: ${accepted.join(', ')})` : ''}`;
    } else if (e.keyword === 'enum')
      message = `must be one of ${(params.allowedValues as unknown[]).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}`;
    else message = e.message ?? 'is invalid';
    const problem = { key: segments[0] ?? '', field: segments.join('.'), message };
    if (!out.some((p) => p.field === problem.field && p.message === problem.message)) out.push(problem);
  }
  return out;
}

/**
 * Applies the schema's defaults and validates; throws VALIDATION naming each problem, with
 * `details.fields`: the problems by setting (what the console shows beside each field).
 */
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
    const problems = settingsProblems(validate.errors, schema);
    const described = problems.map((p) => `${p.field || '(settings)'} ${p.message}`);
    const fields: Record<string, string> = {};
    for (const p of problems) {
      if (!p.key) continue;
      const said = p.field === p.key ? p.message : `${p.field} ${p.message}`;
      fields[p.key] = fields[p.key] ? `${fields[p.key]}; ${said}` : said;
    }
    throw new MemoError('VALIDATION', `Invalid settings for pack "${id}": ${described.join('; ')}.`, {
      plugin: id,
      details: { problems: described, fields },
    });
  }
  return copy;
}
