/**
 * MCP profiles: which of the kernel's tools an MCP endpoint serves. A profile names packs and tools
 * (`vault` = every tool of the vault pack, `read_file` = that tool); `all` serves every enabled tool.
 * A profile limits calls as well as the list: a tool outside it does not exist for the client
 * (UNKNOWN_TOOL from the one pipeline, which gets the profile's tools as the call's scope).
 *
 * In tool-search mode (`search: true`) the list starts small: `find_tools` alone, plus whatever the
 * client has found with it (see FoundTools); every tool of the profile can still be called by name.
 */
import { MemoError } from '../errors.js';
import type { RegisteredTool, ToolRegistry } from '../tools/tool-registry.js';
import { FIND_TOOLS } from '../agent/find-tools.js';
import { PROFILE_ENTRY, PROFILE_NAME, type McpProfileSetting } from '../util/mcp-settings.js';

export type { McpProfileSetting };
export { PROFILE_NAME };

export interface McpProfile extends McpProfileSetting {
  /** How the profile was chosen, for messages: `all`, `vault`, `--tools vault,read_file`. */
  name: string;
}

const ALL = '*';

/** The profiles every Memo has; settings cannot redefine them. */
export const BUILTIN_PROFILES: Readonly<Record<string, McpProfileSetting>> = {
  all: { tools: [ALL] },
  vault: { tools: ['vault'] },
  files: { tools: ['fs-tools'] },
  search: { tools: [ALL], search: true },
};

/** The entries of `--tools a,b,c` (or a stored profile's list), checked for shape; a usage error names the bad one. */
export function parseToolList(value: string, what: string): string[] {
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (entries.length === 0) throw new MemoError('VALIDATION', `${what} needs at least one pack id or tool name (vault, read_file, ...)`);
  const bad = entries.find((e) => !PROFILE_ENTRY.test(e));
  if (bad !== undefined) throw new MemoError('VALIDATION', `${what}: "${bad.slice(0, 100)}" is not a pack id or tool name`);
  return [...new Set(entries)];
}

/**
 * The profile of one `memo serve`: `--tools` (a list made on the spot), else `--profile NAME` (built-in
 * or stored), else `all`. `--search` turns tool-search mode on for either.
 */
export function chooseProfile(
  options: { tools?: string; profile?: string; search?: boolean },
  stored: Readonly<Record<string, McpProfileSetting>> = {},
): McpProfile {
  if (options.tools !== undefined && options.profile !== undefined)
    throw new MemoError('VALIDATION', '--tools and --profile both choose the tools served: give one');
  let profile: McpProfile;
  if (options.tools !== undefined) {
    profile = { name: `--tools ${options.tools}`, tools: parseToolList(options.tools, '--tools') };
  } else {
    const name = options.profile ?? 'all';
    const setting = BUILTIN_PROFILES[name] ?? stored[name];
    if (!setting) {
      const known = [...Object.keys(BUILTIN_PROFILES), ...Object.keys(stored).sort()];
      throw new MemoError(
        'NOT_FOUND',
        `There is no MCP profile "${name.slice(0, 40)}" (profiles: ${known.join(', ')}; memo settings profile set NAME --tools ... adds one)`,
      );
    }
    profile = { name, tools: [...setting.tools], ...(setting.search ? { search: true } : {}) };
  }
  if (options.search) profile.search = true;
  return profile;
}

/** Entries of a profile that name neither a loaded pack nor a tool (a pack loaded later would still be served). */
export function unknownEntries(profile: McpProfileSetting, registry: ToolRegistry): string[] {
  const packs = new Set(registry.packs().map((p) => p.id));
  return profile.tools.filter((e) => e !== ALL && !packs.has(e) && !registry.has(e));
}

/** Whether the profile serves a tool: by its name, by its pack's id, or because it serves all. */
export function profileIncludes(profile: McpProfileSetting, tool: RegisteredTool): boolean {
  return profile.tools.includes(ALL) || profile.tools.includes(tool.spec.name) || profile.tools.includes(tool.pack.id);
}

/**
 * The enabled tools a profile serves, now (a pack loaded, enabled or disabled since is followed). In
 * tool-search mode find_tools is always among them: it is how the client reaches the rest.
 */
export function profileTools(profile: McpProfileSetting, registry: ToolRegistry): RegisteredTool[] {
  return registry.list().filter((t) => profileIncludes(profile, t) || (profile.search === true && t.spec.name === FIND_TOOLS));
}

/** Whether a profile serves every tool, with nothing deferred: the endpoint then needs no scope at all. */
export function servesEverything(profile: McpProfileSetting): boolean {
  return profile.tools.includes(ALL) && profile.search !== true;
}

/** One line on what a profile serves, for memo serve's banner and logs. */
export function describeProfile(profile: McpProfile, registry: ToolRegistry): string {
  const count = profileTools(profile, registry).length;
  const what = profile.tools.includes(ALL) ? 'every enabled tool' : profile.tools.join(', ');
  const label = profile.name.startsWith('--') ? profile.name : `profile ${profile.name}`;
  return profile.search
    ? `${label}: tool search over ${count - 1} tools (${what}); clients are listed find_tools and the tools they found with it`
    : `${label}: ${count} tools (${what})`;
}
