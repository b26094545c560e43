/**
 * The one JSON Schema of a tool declaration: a `plugin.json` tool, a host pack's `ToolSpec` in code
 * and a SKILL.md command tool (which adds its command fields on top) are all checked against it, so
 * the three cannot drift apart.
 */
export const TOOL_NAME_PATTERN = '^[A-Za-z0-9_-]{1,64}$';

const properties = {
  name: { type: 'string', pattern: TOOL_NAME_PATTERN },
  description: { type: 'string', minLength: 1, maxLength: 4096, pattern: '\\S' },
  parameters: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
  danger: { enum: ['safe', 'medium', 'dangerous'] },
  effect: { enum: ['read', 'write', 'delete'] },
  timeoutMs: { type: 'integer', minimum: 1, maximum: 3_600_000 },
  sensitiveArgs: { type: 'array', items: { type: 'string', minLength: 1 } },
  confirm: { const: 'always' },
  openWorld: { type: 'boolean' },
  editable: { type: 'boolean' },
  modes: { type: 'array', items: { enum: ['vault', 'web'] }, uniqueItems: true },
  keywords: { type: 'array', maxItems: 32, items: { type: 'string', minLength: 1, maxLength: 64, pattern: '\\S' } },
  examples: { type: 'array', maxItems: 16, items: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' } },
} as const;

export const TOOL_DECLARATION_SCHEMA = {
  type: 'object',
  required: ['name', 'description', 'parameters', 'danger', 'effect'],
  additionalProperties: false,
  properties,
} as const;

/** The declaration's fields, for schemas that extend it (skills' command tools). */
export const TOOL_DECLARATION_FIELDS = properties;
