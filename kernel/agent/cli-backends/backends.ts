/**
 * The three agent CLIs Memo can run a turn through, as data: how each is found, which flags run one
 * non-interactive turn with Memo's MCP endpoint and nothing else of ours, and how its stream reads.
 *
 * Flags come from each CLI's own documentation (Claude Code's CLI reference and headless guide;
 * Codex's `codex exec` and config reference, its `exec_events.rs` for `--json`). Antigravity (`agy`)
 * documents `-p/--print` (the reply as plain text on stdout) and reads MCP servers only from
 * `~/.gemini/config/mcp_config.json`; it has no documented flag that turns its own file and shell
 * tools off, so it is offered with Computer access only (see the README).
 */

export type BackendId = 'claude' | 'codex' | 'agy';

/**
 * Per turn (seed 003): `vault` keeps the CLI to Memo's tools (its own file, shell and web tools
 * turned off through its flags, so every tool call passes this kernel's gate and audit);
 * `computer` lets it use its own tools too, said plainly and recorded with the turn.
 */
export type AccessMode = 'vault' | 'computer';

export interface BackendSpec {
  id: BackendId;
  /** How people and errors name it: "Claude CLI failed to start: ...". */
  label: string;
  binary: string;
  /** The oldest version that works, when there is one. */
  floor?: string;
  /** The provider name stored with each reply. */
  provider: string;
  /** What a person does once before the first turn. */
  signIn: string;
  /** False: the CLI cannot be limited to Memo's tools through its flags. */
  vaultOnly: boolean;
  /**
   * Set when the CLI takes its prompt as a command-line argument (agy): the most bytes (UTF-8) that
   * argument may hold, system prompt included. Linux refuses a single argument over 128 KiB (E2BIG).
   */
  argvPromptBytes?: number;
  /**
   * In the OS sandbox: the only domains the CLI's network reaches (its provider's API and sign-in),
   * through the kernel's filtering proxy; Memo's MCP endpoint is bridged in besides.
   */
  domains: string[];
  /** Its own files under HOME (login, settings, history): writable inside the sandbox, and only these. */
  ownFiles: string[];
}

export const BACKENDS: Record<BackendId, BackendSpec> = {
  claude: {
    id: 'claude',
    label: 'Claude CLI',
    binary: 'claude',
    floor: '2.1.0',
    provider: 'claude-cli',
    signIn: 'run `claude` once and sign in (or `claude setup-token`), or set ANTHROPIC_API_KEY',
    vaultOnly: true,
    domains: ['api.anthropic.com', '*.anthropic.com', 'claude.ai', '*.claude.ai'],
    ownFiles: ['.claude', '.claude.json', '.config/claude'],
  },
  codex: {
    id: 'codex',
    label: 'Codex CLI',
    binary: 'codex',
    provider: 'codex-cli',
    signIn: 'run `codex login` once, or set OPENAI_API_KEY',
    vaultOnly: true,
    domains: ['api.openai.com', '*.openai.com', 'chatgpt.com', '*.chatgpt.com'],
    ownFiles: ['.codex'],
  },
  agy: {
    id: 'agy',
    label: 'Antigravity CLI',
    binary: 'agy',
    floor: '1.2.7',
    provider: 'antigravity-cli',
    signIn: 'run `agy` once interactively and sign in with your Google account',
    vaultOnly: false,
    // Well under Linux's 128 KiB for one argument (MAX_ARG_STRLEN).
    argvPromptBytes: 96 * 1024,
    domains: ['*.googleapis.com', 'accounts.google.com', '*.google.com'],
    ownFiles: ['.gemini', '.antigravity', '.config/antigravity'],
  },
};

export function isBackendId(value: string): value is BackendId {
  return value === 'claude' || value === 'codex' || value === 'agy';
}

/** The MCP server name the CLIs see; Claude prefixes its tools with `mcp__memo__`. */
export const MCP_SERVER_NAME = 'memo';
/** The environment variables Codex reads the endpoint's token and the turn's capability from (never argv). */
export const TOKEN_ENV = 'MEMO_MCP_TOKEN';
export const CAPABILITY_ENV = 'MEMO_MCP_WRITE_CAPABILITY';
const CAPABILITY_HEADER = 'X-Memo-Write-Capability';

/** Claude Code's own tools, all turned off in Vault only (besides `--tools ""`, which empties the set). */
const CLAUDE_OWN_TOOLS = [
  'Bash',
  'BashOutput',
  'KillShell',
  'Edit',
  'MultiEdit',
  'Write',
  'NotebookEdit',
  'Read',
  'Glob',
  'Grep',
  'WebFetch',
  'WebSearch',
  'Task',
];

/**
 * Codex's own tools, all turned off in Vault only, each in every spelling the Codex versions in use
 * accept (a key a version does not know is ignored by it, with at most a warning). From Codex's
 * `core/src/features.rs`, `features/legacy.rs` and `config` (`ToolsToml`):
 * - the shell: `features.shell_tool` and the unified exec tool (`features.unified_exec`);
 * - web search: `web_search = "disabled"` (current), `tools.web_search` and
 *   `features.web_search_request` (older);
 * - the patch tool: `include_apply_patch_tool` (legacy) and `features.apply_patch_freeform`;
 * - `view_image`, which loads any local image by path (the read-only sandbox allows reading the whole
 *   disk): `features.view_image_tool` (stable, default on, in the versions that have the flag) and
 *   `tools.view_image` (older). Codex versions after the flag was removed add `view_image` without a
 *   switch: there it stays (see the README);
 * - sub-agents (`features.multi_agent`, stable and on by default; `features.collab` before), the
 *   JavaScript REPL and code mode (`features.js_repl`, `features.code_mode`, off by default but a
 *   person's config.toml may turn them on), and ChatGPT apps (`features.apps`, `features.connectors`).
 */
const CODEX_VAULT_OFF = [
  'features.shell_tool=false',
  'features.unified_exec=false',
  'web_search="disabled"',
  'tools.web_search=false',
  'features.web_search_request=false',
  'include_apply_patch_tool=false',
  'features.apply_patch_freeform=false',
  'features.view_image_tool=false',
  'tools.view_image=false',
  'features.multi_agent=false',
  'features.collab=false',
  'features.js_repl=false',
  'features.code_mode=false',
  'features.apps=false',
  'features.connectors=false',
];

export interface McpAccess {
  url: string;
  token: string;
  /** The turn's single-use write capability; absent for a tool-less request (titles, summaries). */
  capability?: string;
}

export interface InvocationRequest {
  prompt: string;
  model?: string;
  mode: AccessMode;
  /** Memo's endpoint for this turn; absent: the CLI gets no MCP server at all. */
  mcp?: McpAccess;
  /** A private folder (0700) for this run, removed after it. */
  runDir: string;
  /** The workspace root: the CLI's working folder. */
  cwd: string;
  systemPrompt?: string;
  effort?: Effort;
}

export type Effort = 'low' | 'medium' | 'high';

export interface Invocation {
  args: string[];
  /** Added to the child's environment. */
  env: Record<string, string>;
  /**
   * Written to the child's stdin, then closed. Claude and Codex get the prompt here, never in argv
   * (argv is readable by every local user through the process list). agy has no documented way to
   * read it from stdin: its prompt goes in argv (capped at `argvPromptBytes`) and this is empty.
   */
  stdin: string;
  /** Files to write (mode 0600) before the run; all live under `runDir`. */
  files: Array<{ path: string; content: string }>;
  /** The stream format of stdout. */
  format: 'claude-stream-json' | 'codex-jsonl' | 'text';
}

/** Claude Code's `--mcp-config` file: one HTTP server, the token and the capability as headers. */
function claudeMcpConfig(mcp: McpAccess): string {
  const headers: Record<string, string> = { Authorization: `Bearer ${mcp.token}` };
  if (mcp.capability) headers[CAPABILITY_HEADER] = mcp.capability;
  return JSON.stringify({ mcpServers: { [MCP_SERVER_NAME]: { type: 'http', url: mcp.url, headers } } }, null, 2);
}

/** A TOML string (basic string, escaped) for a `-c key=value` override. */
function toml(value: string): string {
  return JSON.stringify(value);
}

/** Claude's thinking budget for an effort (MAX_THINKING_TOKENS). */
const CLAUDE_THINKING: Record<Effort, string> = { low: '4000', medium: '10000', high: '31999' };

/** The `-p` argument of an agy run: the system prompt, then the prompt (its size is capped by the caller). */
export function agyPrompt(systemPrompt: string | undefined, prompt: string): string {
  return systemPrompt ? `${systemPrompt}\n\n${prompt}` : prompt;
}

export function buildInvocation(id: BackendId, req: InvocationRequest): Invocation {
  if (id === 'claude') {
    const args = ['-p', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--strict-mcp-config'];
    const files: Invocation['files'] = [];
    if (req.mcp) {
      const file = `${req.runDir}/mcp.json`;
      files.push({ path: file, content: claudeMcpConfig(req.mcp) });
      args.push('--mcp-config', file);
    }
    if (req.mode === 'vault') {
      // No built-in tool at all; the MCP server's tools are allowed without Claude's own prompt,
      // because this kernel's gate asks the person.
      args.push('--tools', '', '--disallowedTools', CLAUDE_OWN_TOOLS.join(','));
      args.push('--permission-mode', 'default');
      if (req.mcp) args.push('--allowedTools', `mcp__${MCP_SERVER_NAME}`);
    } else {
      args.push('--permission-mode', 'acceptEdits');
      args.push('--allowedTools', [...(req.mcp ? [`mcp__${MCP_SERVER_NAME}`] : []), ...CLAUDE_OWN_TOOLS].join(','));
    }
    if (req.model) args.push('--model', req.model);
    if (req.systemPrompt) args.push('--append-system-prompt', req.systemPrompt);
    return { args, env: req.effort ? { MAX_THINKING_TOKENS: CLAUDE_THINKING[req.effort] } : {}, stdin: req.prompt, files, format: 'claude-stream-json' };
  }
  if (id === 'codex') {
    const args = ['exec', '--json', '--skip-git-repo-check', '--cd', req.cwd, '-c', 'approval_policy="never"'];
    const env: Record<string, string> = {};
    // Vault only: the person's own MCP servers (in ~/.codex/config.toml) are emptied out first, so the
    // only tools are Memo's (Codex applies -c overrides in order; Claude has --strict-mcp-config).
    if (req.mode === 'vault') args.push('-c', 'mcp_servers={}');
    if (req.mcp) {
      args.push('-c', `mcp_servers.${MCP_SERVER_NAME}.url=${toml(req.mcp.url)}`);
      // Codex reads the bearer token and extra headers from environment variables it is told the
      // names of: the values never appear in argv or in a file.
      args.push('-c', `mcp_servers.${MCP_SERVER_NAME}.bearer_token_env_var=${toml(TOKEN_ENV)}`);
      env[TOKEN_ENV] = req.mcp.token;
      if (req.mcp.capability) {
        args.push('-c', `mcp_servers.${MCP_SERVER_NAME}.env_http_headers={ ${toml(CAPABILITY_HEADER)} = ${toml(CAPABILITY_ENV)} }`);
        env[CAPABILITY_ENV] = req.mcp.capability;
      }
    }
    if (req.mode === 'vault') {
      args.push('--sandbox', 'read-only');
      for (const override of CODEX_VAULT_OFF) args.push('-c', override);
    } else {
      args.push('--sandbox', 'workspace-write');
    }
    if (req.model) args.push('--model', req.model);
    if (req.effort) args.push('-c', `model_reasoning_effort=${toml(req.effort)}`);
    const prompt = req.systemPrompt ? `${req.systemPrompt}\n\n${req.prompt}` : req.prompt;
    // `-` reads the prompt from stdin.
    args.push('-');
    return { args, env, stdin: prompt, files: [], format: 'codex-jsonl' };
  }
  // agy: only the documented print mode. Its MCP servers come from $HOME/.gemini/config/mcp_config.json,
  // so the run gets a temporary HOME holding only that file (never the person's real one).
  const home = `${req.runDir}/home`;
  const files: Invocation['files'] = [];
  if (req.mcp) {
    const headers: Record<string, string> = { Authorization: `Bearer ${req.mcp.token}` };
    if (req.mcp.capability) headers[CAPABILITY_HEADER] = req.mcp.capability;
    files.push({
      path: `${home}/.gemini/config/mcp_config.json`,
      content: JSON.stringify({ mcpServers: { [MCP_SERVER_NAME]: { serverUrl: req.mcp.url, headers } } }, null, 2),
    });
  }
  const args = ['-p', agyPrompt(req.systemPrompt, req.prompt)];
  if (req.model) args.push('--model', req.model);
  // agy -p takes the prompt as the flag's argument (documented); nothing else is read from stdin.
  return { args, env: { HOME: home }, stdin: '', files, format: 'text' };
}
