import type { JsonSchema, RestrictedMode, ToolSpec } from '../tools/contract.js';
import { TOOL_DECLARATION_FIELDS, TOOL_DECLARATION_SCHEMA } from '../tools/tool-declaration.js';

/**
 * What a pack may declare in its manifest's `privileges` beyond the ordinary contribution points, and
 * is granted only when it is a built-in pack (pack-privileges.ts): `administration` is the kernel's
 * administration view (`api.administration()`): approvals, permissions, packs, providers,
 * conversations, the audit trail, the MCP token's rotation.
 */
export const PACK_PRIVILEGES = ['administration'] as const;
export type PackPrivilege = (typeof PACK_PRIVILEGES)[number];

/** `plugin.json`: what the kernel needs to list, validate, gate and rate-limit a pack's tools before its code runs. */
export interface PackManifest {
  id: string;
  name: string;
  version: string;
  description: string;
  main: string;
  tools: ToolSpec[];
  /**
   * The restricted access modes that offer the pack's tools by default (`vault`, `web`); a tool's own
   * `modes` (even `[]`) overrides it. Absent: Computer access only.
   */
  modes?: RestrictedMode[];
  /** JSON Schema of the pack's settings (`memo plugins config`). */
  config?: JsonSchema;
  enabledByDefault?: boolean;
  /** Privileges the pack asks for; granted to built-in packs only (pack-privileges.ts). */
  privileges?: PackPrivilege[];
}

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
    tools: { type: 'array', items: TOOL_DECLARATION_SCHEMA },
    modes: TOOL_DECLARATION_FIELDS.modes,
    config: { type: 'object' },
    enabledByDefault: { type: 'boolean' },
    privileges: { type: 'array', items: { enum: PACK_PRIVILEGES }, uniqueItems: true },
  },
} as const;
