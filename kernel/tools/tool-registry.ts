import { EventEmitter } from 'node:events';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { MemoError } from '../errors.js';
import { toDisposable, type Disposable } from '../disposable.js';
import type { Danger, Effect, ToolImplementation, ToolAssess, ToolPreview, ToolRun, ToolSpec } from './contract.js';
import type { PackActivate } from '../packs/pack-api.js';

// ajv-formats is CommonJS; under ESM its default export may arrive wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

export type PackSource = 'builtin' | 'extra' | 'host' | 'skill' | 'kernel';

/** A pack as it is handed to the registry: by the manifest loader, or programmatically by a host app. */
export interface PackDefinition {
  id: string;
  name?: string;
  version?: string;
  description?: string;
  source?: PackSource;
  /** Folder the pack came from (manifest packs). */
  dir?: string;
  tools: Array<{ spec: ToolSpec; impl: ToolImplementation }>;
  /** The pack's current settings; read at each call so changes apply live. */
  config?: () => Readonly<Record<string, unknown>>;
  /** Contributions beyond tools (model providers, ...), run after the tools are registered. */
  activate?: PackActivate;
}

export interface RegisteredPack {
  id: string;
  name: string;
  version: string;
  description: string;
  source: PackSource;
  dir?: string;
  toolNames: string[];
  config: () => Readonly<Record<string, unknown>>;
}

export interface RegisteredTool {
  spec: Readonly<ToolSpec>;
  pack: RegisteredPack;
  run: ToolRun;
  preview?: ToolPreview;
  assess?: ToolAssess;
  validate: ValidateFunction;
}

export type RegistryChange = { kind: 'added' | 'removed' | 'reloaded' | 'enabled' | 'disabled'; pack: string; tools: string[] };

const DANGERS: readonly Danger[] = ['safe', 'medium', 'dangerous'];
const EFFECTS: readonly Effect[] = ['read', 'write', 'delete'];
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const PACK_ID = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** Formats ajv's errors as one line per problem, each naming its field. */
export function describeAjvErrors(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    let field = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : '';
    if (e.keyword === 'required') field = [field, (e.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.');
    if (e.keyword === 'additionalProperties') field = [field, (e.params as { additionalProperty: string }).additionalProperty].filter(Boolean).join('.');
    const what = e.keyword === 'additionalProperties' ? 'is not an accepted field' : e.keyword === 'required' ? 'is required' : (e.message ?? 'is invalid');
    return `${field || '(arguments)'} ${what}`;
  });
}

export function createAjv(extra: { useDefaults?: boolean } = {}): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: true, ...extra });
  addFormats(ajv);
  return ajv;
}

/** Checks a tool declaration; returns the problems (empty when valid). */
export function specProblems(spec: ToolSpec): string[] {
  const p: string[] = [];
  if (typeof spec.name !== 'string' || !TOOL_NAME.test(spec.name)) p.push(`name must match ${TOOL_NAME} (got ${JSON.stringify(spec.name)})`);
  if (typeof spec.description !== 'string' || spec.description.trim() === '') p.push('description is required');
  if (!DANGERS.includes(spec.danger)) p.push(`danger must be one of ${DANGERS.join(', ')}`);
  if (!EFFECTS.includes(spec.effect)) p.push(`effect must be one of ${EFFECTS.join(', ')}`);
  if (!spec.parameters || typeof spec.parameters !== 'object' || spec.parameters.type !== 'object')
    p.push('parameters must be a JSON Schema with "type": "object"');
  if (spec.timeoutMs !== undefined && (!Number.isInteger(spec.timeoutMs) || spec.timeoutMs <= 0)) p.push('timeoutMs must be a positive whole number');
  if (spec.sensitiveArgs !== undefined && (!Array.isArray(spec.sensitiveArgs) || spec.sensitiveArgs.some((s) => typeof s !== 'string')))
    p.push('sensitiveArgs must be a list of argument names');
  if (spec.confirm !== undefined && spec.confirm !== 'always') p.push('confirm may only be "always"');
  return p;
}

/**
 * Every tool the kernel can call. A pack registers all its tools or none; the registration is
 * disposable, so unloading or reloading a pack removes exactly what it added.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();
  private readonly packsById = new Map<string, RegisteredPack>();
  private readonly disabled = new Set<string>();
  private readonly events = new EventEmitter();

  /** Registers a pack's tools. Throws VALIDATION (bad spec or schema) or CONFLICT (duplicate id or tool name). */
  registerPack(def: PackDefinition): Disposable {
    if (this.packsById.has(def.id)) throw new MemoError('CONFLICT', `A pack with id "${def.id}" is already loaded.`, { plugin: def.id });
    const prepared = this.prepare(def, undefined);
    this.commit(prepared, undefined);
    this.emit({ kind: 'added', pack: def.id, tools: prepared.pack.toolNames });
    return this.disposer(prepared);
  }

  /**
   * Swaps a loaded pack for a new version in one step (hot reload): the new version is fully
   * validated first, so a broken update leaves the old one in place. Calls already running keep the
   * handler they started with. Emits one `reloaded` change.
   */
  replacePack(def: PackDefinition): Disposable {
    const old = this.packsById.get(def.id);
    if (!old) return this.registerPack(def);
    const prepared = this.prepare(def, old);
    this.commit(prepared, old);
    this.emit({ kind: 'reloaded', pack: def.id, tools: prepared.pack.toolNames });
    return this.disposer(prepared);
  }

  private prepare(def: PackDefinition, replacing: RegisteredPack | undefined): { pack: RegisteredPack; tools: RegisteredTool[] } {
    if (!PACK_ID.test(def.id))
      throw new MemoError('VALIDATION', `Pack id "${def.id}" must be kebab-case (lowercase letters, digits, hyphens).`, { plugin: def.id });
    const ajv = createAjv();
    const pack: RegisteredPack = {
      id: def.id,
      name: def.name ?? def.id,
      version: def.version ?? '0.0.0',
      description: def.description ?? '',
      source: def.source ?? 'host',
      toolNames: def.tools.map((t) => t.spec.name),
      config: def.config ?? (() => ({})),
    };
    if (def.dir !== undefined) pack.dir = def.dir;

    const prepared: RegisteredTool[] = [];
    const seen = new Set<string>();
    for (const { spec, impl } of def.tools) {
      const problems = specProblems(spec);
      if (problems.length)
        throw new MemoError('VALIDATION', `Tool "${spec.name}" of pack "${def.id}" is invalid: ${problems.join('; ')}.`, { plugin: def.id, tool: spec.name });
      if (seen.has(spec.name)) throw new MemoError('CONFLICT', `Pack "${def.id}" declares tool "${spec.name}" twice.`, { plugin: def.id, tool: spec.name });
      seen.add(spec.name);
      const owner = this.tools.get(spec.name);
      if (owner && owner.pack !== replacing)
        throw new MemoError('CONFLICT', `Tool "${spec.name}" of pack "${def.id}" is already provided by pack "${owner.pack.id}".`, {
          plugin: def.id,
          tool: spec.name,
          details: { existingPack: owner.pack.id },
        });
      const run = typeof impl === 'function' ? impl : impl?.run;
      if (typeof run !== 'function')
        throw new MemoError('VALIDATION', `Pack "${def.id}" has no handler function for tool "${spec.name}".`, { plugin: def.id, tool: spec.name });
      let validate: ValidateFunction;
      try {
        validate = ajv.compile(spec.parameters);
      } catch (err) {
        throw new MemoError(
          'VALIDATION',
          `Tool "${spec.name}" of pack "${def.id}" has a parameters schema that cannot be compiled: ${(err as Error).message}`,
          { plugin: def.id, tool: spec.name },
        );
      }
      const tool: RegisteredTool = { spec: Object.freeze({ ...spec }), pack, run, validate };
      if (typeof impl === 'object' && typeof impl.preview === 'function') tool.preview = impl.preview;
      if (typeof impl === 'object' && typeof impl.assess === 'function') tool.assess = impl.assess;
      prepared.push(tool);
    }
    return { pack, tools: prepared };
  }

  private commit({ pack, tools }: { pack: RegisteredPack; tools: RegisteredTool[] }, replacing: RegisteredPack | undefined): void {
    if (replacing) for (const name of replacing.toolNames) if (this.tools.get(name)?.pack === replacing) this.tools.delete(name);
    this.packsById.set(pack.id, pack);
    for (const tool of tools) this.tools.set(tool.spec.name, tool);
  }

  private disposer({ pack, tools }: { pack: RegisteredPack; tools: RegisteredTool[] }): Disposable {
    return toDisposable(() => {
      if (this.packsById.get(pack.id) !== pack) return;
      this.packsById.delete(pack.id);
      for (const tool of tools) if (this.tools.get(tool.spec.name) === tool) this.tools.delete(tool.spec.name);
      this.emit({ kind: 'removed', pack: pack.id, tools: pack.toolNames });
    });
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  /** Tools of enabled packs (all tools with `includeDisabled`), sorted by name. */
  list(options: { includeDisabled?: boolean } = {}): RegisteredTool[] {
    return [...this.tools.values()]
      .filter((t) => options.includeDisabled || !this.disabled.has(t.pack.id))
      .sort((a, b) => a.spec.name.localeCompare(b.spec.name));
  }

  packs(): RegisteredPack[] {
    return [...this.packsById.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  pack(id: string): RegisteredPack | undefined {
    return this.packsById.get(id);
  }

  isEnabled(packId: string): boolean {
    return !this.disabled.has(packId);
  }

  /** Enables or disables a pack (known or not yet loaded); a disabled pack's tools vanish from listings. */
  setEnabled(packId: string, enabled: boolean): void {
    const was = !this.disabled.has(packId);
    if (was === enabled) return;
    if (enabled) this.disabled.delete(packId);
    else this.disabled.add(packId);
    const tools = this.packsById.get(packId)?.toolNames ?? [];
    this.emit({ kind: enabled ? 'enabled' : 'disabled', pack: packId, tools });
  }

  /** Called once per change: a pack added, removed, enabled or disabled. */
  onChange(listener: (change: RegistryChange) => void): Disposable {
    this.events.on('change', listener);
    return toDisposable(() => this.events.off('change', listener));
  }

  private emit(change: RegistryChange): void {
    this.events.emit('change', change);
  }
}
