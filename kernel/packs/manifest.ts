import type { JsonSchema, ToolSpec } from '../tools/contract.js';

/** `plugin.json`: what the kernel needs to list, validate, gate and rate-limit a pack's tools before its code runs. */
export interface PackManifest {
  id: string;
  name: string;
  version: string;
  description: string;
  main: string;
  tools: ToolSpec[];
  /** JSON Schema of the pack's settings (`memo plugins config`). */
  config?: JsonSchema;
  enabledByDefault?: boolean;
}

const toolSchema = {
  type: 'object',
  required: ['name', 'description', 'parameters', 'danger', 'effect'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
    description: { type: 'string', minLength: 1, maxLength: 4096 },
    parameters: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
    danger: { enum: ['safe', 'medium', 'dangerous'] },
    effect: { enum: ['read', 'write', 'delete'] },
    timeoutMs: { type: 'integer', minimum: 1, maximum: 3_600_000 },
    sensitiveArgs: { type: 'array', items: { type: 'string', minLength: 1 } },
    confirm: { const: 'always' },
  },
} as const;

/** The JSON Schema the kernel validates every `plugin.json` against. */
export const MANIFEST_SCHEMA = {
  $id: 'https://memo.local/schemas/plugin.json',
  type: 'object',
  required: ['id', 'name', 'version', 'description', 'main', 'tools'],
  additionalProperties: false,
  properties: {
    $schema: { type: 'string' },
    id: { type: 'string', pattern: '^[a-z0-9]+(?:-[a-z0-9]+)*$', maxLength: 64 },
    name: { type: 'string', minLength: 1, maxLength: 100 },
    version: { type: 'string', pattern: '^\\d+\\.\\d+\\.\\d+(?:[-+][0-9A-Za-z.-]+)?$' },
    description: { type: 'string', minLength: 1, maxLength: 2000 },
    main: { type: 'string', pattern: '^(?!/)(?!.*\\.\\.)[A-Za-z0-9_./-]+\\.(?:js|mjs)$' },
    tools: { type: 'array', items: toolSchema },
    config: { type: 'object' },
    enabledByDefault: { type: 'boolean' },
  },
} as const;
