/**
 * The shapes of the MCP settings an administrator stores (`memo settings profile`, `memo serve token`):
 * named profiles and per-client token digests, with the checks a stored value must pass. Pure data,
 * read by the settings store and by the MCP endpoint.
 */

/** A named MCP profile: the pack ids and tool names it serves (`*`: all), and whether in tool-search mode. */
export interface McpProfileSetting {
  tools: string[];
  search?: boolean;
}

/** One client's MCP token: the SHA-256 of the token (base64url), the profile it is served, when it was made. */
export interface McpTokenSetting {
  digest: string;
  /** A profile name (built in or stored); absent: the profile memo serve was started with. */
  profile?: string;
  created: string;
}

/** A pack id or tool name in a profile, or `*` (every tool). */
export const PROFILE_ENTRY = /^(\*|[A-Za-z0-9][A-Za-z0-9_.-]{0,99})$/;
/** A profile's name. */
export const PROFILE_NAME = /^[a-z][a-z0-9-]{0,39}$/;

export function isProfileSetting(value: unknown): value is McpProfileSetting {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { tools, search, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0) return false;
  if (search !== undefined && typeof search !== 'boolean') return false;
  return Array.isArray(tools) && tools.length > 0 && tools.every((t) => typeof t === 'string' && PROFILE_ENTRY.test(t));
}

/** Named profiles as stored: an object of well-formed profiles under well-formed names. */
export function isProfiles(value: unknown): value is Record<string, McpProfileSetting> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.entries(value).every(([name, p]) => PROFILE_NAME.test(name) && isProfileSetting(p));
}

export function isTokenSetting(value: unknown): value is McpTokenSetting {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { digest, profile, created, ...rest } = value as Record<string, unknown>;
  return (
    Object.keys(rest).length === 0 &&
    typeof digest === 'string' &&
    /^[A-Za-z0-9_-]{43}$/.test(digest) &&
    (profile === undefined || (typeof profile === 'string' && PROFILE_NAME.test(profile))) &&
    typeof created === 'string'
  );
}

/** Client tokens as stored: well-formed entries under client names (the profile-name rule). */
export function isTokens(value: unknown): value is Record<string, McpTokenSetting> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.entries(value).every(([name, t]) => PROFILE_NAME.test(name) && isTokenSetting(t));
}

/** The longest MCP client name kept (clientInfo.name is free text chosen by the client). */
export const CLIENT_NAME_MAX = 64;

/** A client name as `memo permissions external-writes --client` takes it: 1 to 64 characters, no control characters. */
export function isClientName(value: unknown): value is string {
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point: the name is shown to a person
  return typeof value === 'string' && value.length > 0 && value.length <= CLIENT_NAME_MAX && !/[\u0000-\u001f\u007f]/.test(value);
}
