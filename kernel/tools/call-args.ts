/**
 * A call's arguments on their way in: checked against the tool's parameters schema (validateArgs),
 * and a person's edit of masked arguments put back together with the originals (unmask).
 */
import { MemoError } from '../errors.js';
import { MASK } from '../secrets/masking.js';
import { describeAjvErrors, type RegisteredTool } from './tool-registry.js';

/**
 * An edited copy of the arguments with every value still reading "[masked]" put back from the
 * original where the original has a value at the same place (the face only ever saw the mask).
 */
export function unmask(edit: unknown, original: unknown): unknown {
  if (edit === MASK && original !== undefined) return original;
  if (Array.isArray(edit)) return edit.map((v, i) => unmask(v, Array.isArray(original) ? original[i] : undefined));
  if (edit && typeof edit === 'object') {
    const from = original && typeof original === 'object' && !Array.isArray(original) ? (original as Record<string, unknown>) : {};
    return Object.fromEntries(Object.entries(edit).map(([k, v]) => [k, unmask(v, Object.hasOwn(from, k) ? from[k] : undefined)]));
  }
  return edit;
}

/** The arguments as an object the tool's schema accepts, or INVALID_ARGS (TOOL_FAILED for a schema that cannot be compiled). */
export function validateArgs(tool: RegisteredTool, raw: unknown): Record<string, unknown> {
  const args = raw === undefined || raw === null ? {} : raw;
  if (typeof args !== 'object' || Array.isArray(args)) {
    throw new MemoError('INVALID_ARGS', `${tool.spec.name} takes an object of named arguments, not ${Array.isArray(args) ? 'an array' : `a ${typeof args}`}.`, {
      tool: tool.spec.name,
      plugin: tool.pack.id,
    });
  }
  let valid: boolean;
  try {
    valid = tool.validate(args);
  } catch (err) {
    // Compiled on first use (see SchemaCompiler.hold): what the meta-schema could not rule out fails here.
    throw new MemoError('TOOL_FAILED', `${tool.spec.name} has a parameters schema that cannot be compiled: ${(err as Error).message}`, {
      tool: tool.spec.name,
      plugin: tool.pack.id,
    });
  }
  if (!valid) {
    const problems = describeAjvErrors(tool.validate.errors);
    throw new MemoError('INVALID_ARGS', `Invalid arguments for ${tool.spec.name}: ${problems.join('; ')}.`, {
      tool: tool.spec.name,
      plugin: tool.pack.id,
      details: { problems },
    });
  }
  return args as Record<string, unknown>;
}
