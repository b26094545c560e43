/**
 * The shapes of the kernel's stored state (each store's file, and what the shared database's rows
 * read as): permissions, pack choices, providers, administrator settings. Types only, so the stores
 * and their tables (kernel-state-tables.ts) can both use them without importing each other.
 */
import type { McpProfileSetting, McpTokenSetting } from '../util/mcp-settings.js';

export type { McpProfileSetting, McpTokenSetting };
import type { ProviderConfig } from '../providers/provider.js';
import type { AccessMode } from '../tools/contract.js';

/**
 * How long a stored decision lasts: until revoked (`forever`), until a moment (`until`, from an
 * `allow-minutes:N` answer), or as long as one conversation exists (`conversation`).
 */
export type DecisionScope = 'forever' | 'until' | 'conversation';

export interface StoredDecision {
  tool: string;
  decision: 'allow' | 'deny';
  plugin: string | null;
  /** When it was given (ISO). */
  at: string;
  scope: DecisionScope;
  /** For `until`: when it stops applying (ISO). */
  expiresAt?: string;
  /** For `conversation`: the conversation it belongs to. */
  conversationId?: string;
}

/** What `data/permissions.json` holds (and, with MEMO_DATABASE_URL, what memo_kernel's rows read as). */
export interface PermissionShape {
  version: 2;
  /** The person's global "always allow" setting (seed 003): never settable through a tool. */
  alwaysAllow: boolean;
  decisions: StoredDecision[];
  /** Whether external MCP clients may ask for writes (`memo permissions external-writes`); absent: off for all. */
  externalWrites?: ExternalWritesSetting;
}

/**
 * External writes, a person's choice (`memo permissions external-writes on|off [--client NAME]`):
 * off by default (seed 003). When on for a client, its writes are asked every time in the approvals
 * inbox (allow-once or deny); nothing stored ever answers them. `clients` are self-declared
 * clientInfo names: labels any token holder can claim, not credentials.
 */
export interface ExternalWritesSetting {
  /** On for every external client. */
  all: boolean;
  /** On for clients declaring these names (exactly, case-sensitive). */
  clients: string[];
}

export interface PackEntry {
  enabled?: boolean;
  config?: Record<string, unknown>;
}

/** What `data/packs.json` holds (and, with MEMO_DATABASE_URL, what memo_kernel's rows read as). */
export interface PackShape {
  version: 1;
  packs: Record<string, PackEntry>;
}

/** What `data/providers.json` holds (and, with MEMO_DATABASE_URL, what memo_kernel's rows read as). */
export interface ProviderShape {
  version: 1;
  active: string | null;
  providers: Record<string, ProviderConfig>;
  /** The access mode a chat turn uses unless one is chosen (absent: `computer`): kept beside the active provider, the other choice every chat starts from. */
  mode?: AccessMode;
}

/** `off`, or calls per minute for each caller. */
export type RateLimitSetting = 'off' | number;

/** Where the OS sandbox cannot start: refuse commands (default), or run them with the judge as the only wall. */
export type SandboxSetting = 'refuse' | 'judged';

export interface Settings {
  rateLimit?: RateLimitSetting;
  sandbox?: SandboxSetting;
  /** Named MCP profiles for `memo serve --profile NAME`, by name. */
  mcpProfiles?: Record<string, McpProfileSetting>;
  /** Per-client MCP tokens (`memo serve token add`), by client name: digests only, never the tokens. */
  mcpTokens?: Record<string, McpTokenSetting>;
}
