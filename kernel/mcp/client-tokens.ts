/**
 * Per-client MCP tokens (`memo serve token add NAME [--profile P]`): besides the endpoint's own token,
 * each named client may hold a token of its own, stored as a SHA-256 digest only. A request with one
 * is that client: its rate budget is the token's (whatever name the client declares), its audit lines
 * name the token, its tools are the token's profile, and in tool-search mode its found tools are kept
 * under the token. Removing the token refuses its next request, on any session.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Settings } from '../state/shapes.js';
import { generateToken } from './auth.js';
import { chooseProfile, type McpProfile } from './mcp-profile.js';

/** Who a named token belongs to, and what it is served. */
export interface McpClient {
  /** The token's name (`memo serve token add NAME`). */
  name: string;
  /** Its profile; absent: the endpoint's own. */
  profile?: McpProfile;
}

/** The SHA-256 of a token, base64url: what settings keep. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

/** A new client token and the digest to store. */
export function newClientToken(): { token: string; digest: string } {
  const token = generateToken();
  return { token, digest: tokenDigest(token) };
}

/**
 * The client a presented token names, read from the settings as they are now (a token added or
 * removed while memo serve runs counts at once), compared in constant time; undefined when none does.
 * A token whose profile no longer exists is served nothing rather than everything.
 */
export function clientTokenLookup(settings: () => Settings): (presented: string) => McpClient | undefined {
  return (presented) => {
    const s = settings();
    const tokens = s.mcpTokens;
    if (!tokens) return undefined;
    const digest = Buffer.from(tokenDigest(presented), 'base64url');
    let found: McpClient | undefined;
    for (const [name, entry] of Object.entries(tokens)) {
      const stored = Buffer.from(entry.digest, 'base64url');
      // Every entry is compared, whatever matched before: the time taken does not say which.
      if (stored.length === digest.length && timingSafeEqual(stored, digest) && !found) {
        found = { name };
        if (entry.profile !== undefined) {
          try {
            found.profile = chooseProfile({ profile: entry.profile }, s.mcpProfiles ?? {});
          } catch {
            found.profile = { name: `${entry.profile} (removed)`, tools: [] };
          }
        }
      }
    }
    return found;
  };
}
