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

type ToolFields = typeof TOOL_DECLARATION_FIELDS;

/**
 * What each field of a tool declaration means: the descriptions docs/reference/plugin-json.md and
 * skill-md.md show. A field added to the declaration without one is a compile error here.
 */
const TOOL_FIELD_DESCRIPTIONS: { [K in keyof ToolFields]: string } = {
  name: "The tool's name (letters, digits, `_` and `-`), unique among the loaded tools: what callers call, and what permissions and the audit trail name.",
  description: 'What the tool does and when to use it: the model, MCP clients and `memo tools list` read it.',
  parameters: 'JSON Schema of the arguments object (`type: "object"`): every call is validated against it before anything else happens.',
  danger:
    '`safe` runs without asking; `medium` and `dangerous` go to the permission gate: a stored decision answers, otherwise a person is asked with a preview.',
  effect: 'What a call does to the world: `read`, `write` or `delete`. A `delete` tool asks every time.',
  timeoutMs: "How long a call may run before it is stopped (`TIMEOUT`), in milliseconds; the kernel's default is 120 s.",
  sensitiveArgs: "Argument names (dotted paths allowed) masked in audit lines beyond the kernel's own rules.",
  confirm: '`always`: ask every time; no standing approval applies.',
  openWorld: 'The tool reaches beyond this machine and its files (the web, a model provider, messaging): announced to MCP clients as `openWorldHint`.',
  editable:
    'The person may edit the arguments before approving (text and field-shaped writes): the edited call is validated, assessed and previewed again, and asked again, before it runs.',
  modes:
    'The restricted access modes that offer the tool: `vault` (Vault only), `web` (Web search only), both, or none (`[]`). Computer access offers every enabled tool whatever this says.',
  keywords: 'Words a person may use for what the tool does, besides its name and description: tool search ranks on them.',
  examples: 'Requests the tool serves, in a person\'s words ("what is on my calendar tomorrow"): tool search ranks on them.',
};

/** The tool declaration's fields with their descriptions (validation is unchanged: a description is an annotation). */
export const DESCRIBED_TOOL_FIELDS = Object.fromEntries(
  Object.entries(TOOL_DECLARATION_FIELDS).map(([key, schema]) => [key, { ...schema, description: TOOL_FIELD_DESCRIPTIONS[key as keyof ToolFields] }]),
) as unknown as { [K in keyof ToolFields]: ToolFields[K] & { description: string } };

/** The JSON Schema the kernel validates every `plugin.json` against. */
export const MANIFEST_SCHEMA = {
  $id: 'https://memo.local/schemas/plugin.json',
  type: 'object',
  required: ['id', 'name', 'version', 'description', 'main', 'tools'],
  additionalProperties: false,
  properties: {
    $schema: { type: 'string', description: 'The URL or path of a JSON Schema for editors; the kernel ignores it.' },
    id: {
      type: 'string',
      pattern: '^[a-z0-9]+(?:-[a-z0-9]+)*$',
      maxLength: 64,
      description: "The pack's id, in kebab-case: it must equal the name of the pack's folder.",
    },
    name: { type: 'string', minLength: 1, maxLength: 100, description: 'The name people see (`memo plugins list`, the console).' },
    version: {
      type: 'string',
      pattern: '^\\d+\\.\\d+\\.\\d+(?:[-+][0-9A-Za-z.-]+)?$',
      description: "The pack's version, semver (`1.2.0`, `1.2.0-beta.1`).",
    },
    description: { type: 'string', minLength: 1, maxLength: 2000, description: 'What the pack is for, in a sentence or two.' },
    main: {
      type: 'string',
      pattern: '^(?!/)(?!.*\\.\\.)[A-Za-z0-9_./-]+\\.(?:js|mjs)$',
      description:
        "The module that exports the tools' handlers, relative to the pack folder (`index.js`); in a TypeScript source checkout the `.ts` file beside it is used.",
    },
    tools: {
      type: 'array',
      items: { ...TOOL_DECLARATION_SCHEMA, properties: DESCRIBED_TOOL_FIELDS },
      description: "The pack's tools, each declared here so the kernel can list, validate, gate and rate-limit it before the pack's code runs.",
    },
    modes: {
      ...TOOL_DECLARATION_FIELDS.modes,
      description:
        "The restricted access modes that offer the pack's tools by default (`vault`, `web`); a tool's own `modes` (even `[]`) overrides it. Absent: Computer access only.",
    },
    config: {
      type: 'object',
      description:
        "JSON Schema of the pack's settings: defaults applied, validated, read by handlers as `ctx.config`, set with `memo plugins config`. Give each property a `title` and a `description`: the console's settings form shows them.",
    },
    enabledByDefault: {
      type: 'boolean',
      description: 'Whether the pack is enabled until someone disables it (`memo plugins disable`); default `true`.',
    },
    privileges: {
      type: 'array',
      items: { enum: PACK_PRIVILEGES },
      uniqueItems: true,
      description:
        "Privileges the pack asks for, granted to built-in packs only: `administration` is the kernel's administration view (`api.administration()`).",
    },
  },
} as const;
