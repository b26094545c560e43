import { EventEmitter } from 'node:events';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { MemoError } from '../errors.js';
import { injectable } from '../di.js';
import { toDisposable, type Disposable } from '../disposable.js';
import type { RestrictedMode, ToolImplementation, ToolAssess, ToolItems, ToolPreview, ToolRun, ToolSpec } from './contract.js';
import type { PackActivate } from '../packs/pack-api.js';
import { compileSchema, SchemaCompiler, schemaProblems } from './schemas.js';
import { effectiveModes } from './access-modes.js';
import { TOOL_DECLARATION_FIELDS, TOOL_DECLARATION_SCHEMA } from './tool-declaration.js';

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
  /**
   * The restricted access modes that offer the pack's tools by default (a manifest's `modes`); a
   * tool's own `modes` (even `[]`) overrides it. Resolved at registration: every registered tool's
   * `spec.modes` is its effective list (absent: Computer access only).
   */
  modes?: RestrictedMode[];
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
  items?: ToolItems;
  validate: ValidateFunction;
}

export type RegistryChange = { kind: 'added' | 'removed' | 'reloaded' | 'enabled' | 'disabled'; pack: string; tools: string[] };

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

const validateDeclaration = compileSchema(TOOL_DECLARATION_SCHEMA);
const validatePackModes = compileSchema(TOOL_DECLARATION_FIELDS.modes);

/** Checks a tool declaration against the one declaration schema; returns the problems (empty when valid). */
function specProblems(spec: ToolSpec): string[] {
  if (validateDeclaration(spec)) return [];
  return schemaProblems(validateDeclaration.errors, spec).map((p) => `${p.field || 'the declaration'} ${p.message}`);
}

/**
 * Every tool the kernel can call. A pack registers all its tools or none; the registration is
 * disposable, so unloading or reloading a pack removes exactly what it added.
 */
@injectable()
export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();
  private readonly packsById = new Map<string, RegisteredPack>();
  private readonly disabled = new Set<string>();
  private readonly events = new EventEmitter();
  /** Compiled schemas of the registered tools' parameters, released when a tool goes away. */
  private readonly held = new Map<RegisteredPack, Array<{ release(): void }>>();
  /** This kernel's compiled JSON Schemas (tool parameters, skill declarations), each compiled once. */
  readonly schemas = new SchemaCompiler();

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
    if (def.modes !== undefined && !validatePackModes(def.modes)) {
      const problems = schemaProblems(validatePackModes.errors, def.modes).map((p) => `${['modes', p.field].filter(Boolean).join('.')} ${p.message}`);
      throw new MemoError('VALIDATION', `Pack "${def.id}" is invalid: ${problems.join('; ')}.`, { plugin: def.id });
    }
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
    const held: Array<{ release(): void }> = [];
    try {
      this.prepareTools(def, pack, replacing, prepared, held);
    } catch (err) {
      for (const h of held) h.release();
      throw err;
    }
    this.held.set(pack, held);
    return { pack, tools: prepared };
  }

  private prepareTools(
    def: PackDefinition,
    pack: RegisteredPack,
    replacing: RegisteredPack | undefined,
    prepared: RegisteredTool[],
    held: Array<{ release(): void }>,
  ): void {
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
        const schema = this.schemas.hold(spec.parameters);
        held.push(schema);
        validate = schema.validate;
      } catch (err) {
        throw new MemoError(
          'VALIDATION',
          `Tool "${spec.name}" of pack "${def.id}" has a parameters schema that cannot be compiled: ${(err as Error).message}`,
          { plugin: def.id, tool: spec.name },
        );
      }
      // The pack's default modes apply here, once: the registered spec carries the effective list.
      const effective: ToolSpec = { ...spec };
      const modes = effectiveModes(spec, def.modes);
      if (modes === undefined) delete effective.modes;
      else effective.modes = modes;
      const tool: RegisteredTool = { spec: Object.freeze(effective), pack, run, validate };
      if (typeof impl === 'object' && typeof impl.preview === 'function') tool.preview = impl.preview;
      if (typeof impl === 'object' && typeof impl.assess === 'function') tool.assess = impl.assess;
      if (typeof impl === 'object' && typeof impl.items === 'function') tool.items = impl.items;
      prepared.push(tool);
    }
  }

  private release(pack: RegisteredPack): void {
    for (const h of this.held.get(pack) ?? []) h.release();
    this.held.delete(pack);
  }

  private commit({ pack, tools }: { pack: RegisteredPack; tools: RegisteredTool[] }, replacing: RegisteredPack | undefined): void {
    if (replacing) {
      for (const name of replacing.toolNames) if (this.tools.get(name)?.pack === replacing) this.tools.delete(name);
      this.release(replacing);
    }
    this.packsById.set(pack.id, pack);
    for (const tool of tools) this.tools.set(tool.spec.name, tool);
  }

  private disposer({ pack, tools }: { pack: RegisteredPack; tools: RegisteredTool[] }): Disposable {
    return toDisposable(() => {
      if (this.packsById.get(pack.id) !== pack) return;
      this.packsById.delete(pack.id);
      this.release(pack);
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
