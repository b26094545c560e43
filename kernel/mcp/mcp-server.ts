import { createHash, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { McpServer, ProtocolError, ProtocolErrorCode, type JSONRPCRequest, type Resource, type ServerContext } from '@modelcontextprotocol/server';
import { SkillsExtension, type Skill as McpSkill, type SkillReadResult, type SkillSource } from '@modelcontextprotocol/server/ext/skills';
import { toDisposable, type Disposable } from '../disposable.js';
import type { Kernel } from '../kernel.js';
import type { Logger } from '../logger.js';
import type { Skill } from '../skills/skill.js';
import { oneLine } from '../skills/skill-index.js';
import { DESCRIPTION_LIMIT } from '../skills/skill.js';
import type { Caller, ProgressUpdate, ToolResult } from '../tools/contract.js';
import { offeredIn } from '../tools/access-modes.js';
import { isPlainObject, toCallToolResult, toMcpTool } from './mcp-tool-mapping.js';
import { FIND_TOOLS, type FoundTools as FoundToolsResult } from '../agent/find-tools.js';
import { FoundTools } from './found-tools.js';
import { profileTools, servesEverything, type McpProfile } from './mcp-profile.js';
import type { McpClient } from './client-tokens.js';

export const MCP_SERVER_NAME = 'memo';
export const MCP_SERVER_VERSION = '0.1.0';
/** Client names are free text chosen by the client; they go into audit lines, so keep them short. */
const CLIENT_NAME_MAX = 64;
const SKILL_URI = 'skill://';
const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';

/** Which protocol revision a server instance serves: 2025-11-25 (sessions) or 2026-07-28 (stateless requests). */
export type McpEra = 'legacy' | 'modern';

/**
 * Change feeds shared by every MCP server instance of a kernel: instances come and go by the
 * dozen (one per request on the stateless revision), and each still gets, and on close drops, its
 * own listener here without stacking dozens of listeners on the registry or the skill manager.
 */
class ChangeFeed {
  private readonly listeners = new Set<() => void>();
  private upstream: Disposable | undefined;

  constructor(private readonly subscribeUpstream: (fire: () => void) => Disposable) {}

  /** How many listeners are subscribed (each live 2025-11-25 session holds one). */
  get size(): number {
    return this.listeners.size;
  }

  subscribe(listener: () => void): Disposable {
    this.listeners.add(listener);
    this.upstream ??= this.subscribeUpstream(() => {
      for (const l of [...this.listeners]) l();
    });
    return toDisposable(() => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        this.upstream?.dispose();
        this.upstream = undefined;
      }
    });
  }
}

const feeds = new WeakMap<Kernel, { tools: ChangeFeed; skills: ChangeFeed }>();

/** The kernel's change feeds: tools (packs and skills with tools loading) and skills (instructions). */
export function changeFeeds(kernel: Kernel): { tools: ChangeFeed; skills: ChangeFeed } {
  let f = feeds.get(kernel);
  if (!f) {
    f = { tools: new ChangeFeed((fire) => kernel.registry.onChange(fire)), skills: new ChangeFeed((fire) => kernel.skills.onChange(fire)) };
    feeds.set(kernel, f);
  }
  return f;
}

export interface McpServerOptions {
  era: McpEra;
  /**
   * The write capability one call presents: per request over HTTP (a header), fixed over stdio
   * (the environment of the process). Only passed on; the pipeline decides what it is worth.
   */
  capability: (ctx: ServerContext) => string | undefined;
  /** The session a 2025-11-25 instance serves (HTTP: the transport's id); each session its own rate budget. */
  sessionId?: () => string | undefined;
  /** The tools this endpoint serves (default: every enabled tool). */
  profile?: McpProfile;
  /** The named client a request came with (a per-client token), if any: its profile replaces `profile`. */
  client?: (ctx: ServerContext) => McpClient | undefined;
  /** Aborted when the client closes the HTTP request a call came on before its answer (see McpHttpEndpoint). */
  requestSignal?: (ctx: ServerContext) => AbortSignal | undefined;
  /** Where each client's found tools are kept, in tool-search mode (one store per endpoint). */
  found?: FoundTools;
  /**
   * Tells clients that a client's tool list changed after find_tools found something new. Default:
   * this instance's own `notifications/tools/list_changed` (a session, stdio); the stateless HTTP leg
   * publishes on the endpoint's listen streams instead.
   */
  onFound?: () => void;
  logger?: Logger;
}

interface CallParams {
  name: string;
  arguments: Record<string, unknown>;
  progressToken?: string | number;
}

/** The params of a `tools/call`, or an Invalid params error naming the one thing wrong. */
function callParams(request: JSONRPCRequest): CallParams {
  const bad = (message: string) => new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid tools/call: ${message}`);
  const params: unknown = request.params;
  if (!isPlainObject(params)) throw bad('params must be an object with the tool name.');
  const { name, arguments: args, _meta: meta } = params;
  if (typeof name !== 'string' || name === '') throw bad('params.name (the tool name, a string) is missing.');
  if (args !== undefined && !isPlainObject(args)) throw bad('params.arguments must be an object.');
  const out: CallParams = { name, arguments: args ?? {} };
  const token = isPlainObject(meta) ? meta.progressToken : undefined;
  if (typeof token === 'string' || typeof token === 'number') out.progressToken = token;
  return out;
}

function short(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value.slice(0, CLIENT_NAME_MAX) : undefined;
}

/** `skill://<name>/<file>` as the skill's name and the file inside its folder, or undefined. */
function parseSkillUri(uri: string): { name: string; file: string } | undefined {
  if (!uri.startsWith(SKILL_URI)) return undefined;
  const rest = uri.slice(SKILL_URI.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  let file: string;
  try {
    file = decodeURIComponent(rest.slice(slash + 1));
  } catch {
    return undefined;
  }
  return { name: rest.slice(0, slash), file };
}

function mimeTypeOf(file: string): string {
  if (/\.(md|markdown)$/i.test(file)) return 'text/markdown';
  if (/\.json$/i.test(file)) return 'application/json';
  return 'text/plain';
}

/**
 * A skill's frontmatter as the skills listing carries it: verbatim, every key the served SKILL.md has
 * (license, metadata, allowed-tools, tools, ...), so a client's check of the listing against the file
 * passes. Only a description over the 1,024-character limit is cut, to one line.
 */
function listedFrontmatter(skill: Skill): McpSkill['frontmatter'] {
  const description = skill.description.length > DESCRIPTION_LIMIT ? oneLine(skill.description) : skill.description;
  return { ...(skill.frontmatter ?? {}), name: skill.name, description };
}

/**
 * A skill's files as the listing carries them: a skill that is its SKILL.md alone lists that file with
 * its digest and size (a client can verify it); one with more files is `dynamic` (its files are read on
 * demand, each a read_skill call). A folder that cannot be read now is `dynamic` too.
 */
function listedResources(skill: Skill): McpSkill['resources'] {
  try {
    if (fs.readdirSync(skill.dir).some((f) => f !== 'SKILL.md')) return 'dynamic';
    const bytes = fs.readFileSync(path.join(skill.dir, 'SKILL.md'));
    return [{ uri: `${SKILL_URI}${skill.name}/SKILL.md`, digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`, size: bytes.length }];
  } catch {
    return 'dynamic';
  }
}

/**
 * One MCP server instance over the kernel: tools, skills as prompts, skill files as resources
 * and through the skills extension. Every tool call, prompt and skill file goes through
 * `kernel.invoke` (the one pipeline: validation, rate limit, gate, audit); `tools/list` and the
 * skill listings read the registry. A 2025-11-25 instance lives for its session and tells its
 * client when tools or skills change; a 2026-07-28 instance serves one request, and the HTTP
 * endpoint publishes changes on the handler's subscription streams instead.
 */
export class MemoMcpServer {
  readonly mcp: McpServer;
  /** Called when a tool call ends: the end of a long call is activity, for an idle timeout. */
  onactivity: (() => void) | undefined;
  private readonly fallbackSessionId = randomUUID();
  private readonly found: FoundTools;
  private readonly listeners: Disposable[] = [];
  private inflight = 0;
  private ready: boolean;
  private closed = false;

  constructor(
    private readonly kernel: Kernel,
    private readonly options: McpServerOptions,
  ) {
    this.ready = options.era === 'modern';
    this.found = options.found ?? new FoundTools();
    this.mcp = new McpServer(
      { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION },
      {
        // A burst of pack reloads (a folder of saves) becomes one notification.
        debouncedNotificationMethods: ['notifications/tools/list_changed', 'notifications/prompts/list_changed', 'notifications/resources/list_changed'],
      },
    );
    const server = this.mcp.server;
    // Declared on the low-level server: declaring them on McpServer would install its own tool and
    // prompt handlers, which know only tools registered through it.
    server.registerCapabilities({ tools: { listChanged: true }, prompts: { listChanged: true } });
    server.oninitialized = () => {
      this.ready = true;
    };
    server.onerror = (err) => this.options.logger?.info(`mcp: ${err.message}`);
    // A caller presenting a Vault-only turn's capability (an agent CLI run in Vault only) is offered that mode's tools alone; the pipeline refuses the rest.
    server.setRequestHandler('tools/list', (_request, ctx) => {
      const mode = this.kernel.capabilities.modeOf(this.options.capability(ctx));
      const profile = this.profileOf(ctx);
      let tools = profile ? profileTools(profile, this.kernel.registry) : this.kernel.registry.list();
      if (profile?.search) {
        const found = new Set(this.found.get(this.clientKey(ctx)));
        tools = tools.filter((t) => t.spec.name === FIND_TOOLS || found.has(t.spec.name));
      }
      return { tools: tools.filter((t) => !mode || offeredIn(t.spec, mode)).map(toMcpTool) };
    });
    // tools/call is not registered through setRequestHandler: the SDK would parse it first and answer
    // a malformed one with a validation dump. Here it gets -32602 and one line.
    server.fallbackRequestHandler = async (request, ctx) => {
      if (request.method !== 'tools/call') throw new ProtocolError(ProtocolErrorCode.MethodNotFound, `Method not found: ${request.method}`);
      return this.callTool(callParams(request), ctx);
    };
    server.setRequestHandler('prompts/list', () => ({
      prompts: this.kernel.skills.loaded().map((s) => ({ name: s.name, description: oneLine(s.description) })),
    }));
    server.setRequestHandler('prompts/get', async (request, ctx) => {
      const name = request.params.name;
      const result = await this.invoke('read_skill', { name }, ctx);
      if (!result.ok) {
        const code = result.error.code === 'NOT_FOUND' ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError;
        throw new ProtocolError(code, `${result.error.code}: ${result.error.message}`);
      }
      const skill = result.value as { description: string; instructions: string; files: string[] };
      const files = skill.files.filter((f) => f !== 'SKILL.md');
      const listing = files.length ? `\n\n---\nFiles of this skill, as resources:\n${files.map((f) => `- ${SKILL_URI}${name}/${f}`).join('\n')}` : '';
      return {
        description: oneLine(skill.description),
        messages: [{ role: 'user' as const, content: { type: 'text' as const, text: `${skill.instructions}${listing}` } }],
      };
    });
    new SkillsExtension({ source: this.skillSource(), onWarning: (w) => this.options.logger?.warn(`mcp skills: ${w.path}: ${w.message}`) }).attach(this.mcp);

    if (options.era === 'legacy') {
      const feeds = changeFeeds(kernel);
      this.listeners.push(
        feeds.tools.subscribe(() => this.notify(() => server.sendToolListChanged())),
        feeds.skills.subscribe(() => {
          this.notify(() => server.sendPromptListChanged());
          this.notify(() => server.sendResourceListChanged());
        }),
      );
    }
  }

  /** True while a tool call of this instance is running (an idle timeout waits for it). */
  get busy(): boolean {
    return this.inflight > 0;
  }

  /** The client's name (2025-11-25: from `initialize`), as audit lines and refusals show it. */
  get clientName(): string {
    return short(this.mcp.server.getClientVersion()?.name) ?? 'unknown-client';
  }

  /** Stops telling the client about changes; the server itself is closed by whoever connected it. */
  release(): void {
    if (this.closed) return;
    this.closed = true;
    for (const l of this.listeners) l.dispose();
    // A session's found tools end with it (a stateless client's are kept by name, with an expiry).
    if (this.options.era === 'legacy') this.found.forget(`session:${this.options.sessionId?.() ?? this.fallbackSessionId}`);
  }

  private notify(send: () => Promise<void>): void {
    if (!this.ready || this.closed) return;
    send().catch(() => {
      // The client has no notification stream open (or just went away): nothing to tell.
    });
  }

  /**
   * Who is calling, for the rate limiter and the audit: a 2025-11-25 client by its session (each
   * session its own budget); a 2026-07-28 client, which has no session, by the name and version it
   * declares on every request (self-declared: fairness, not security).
   */
  private caller(ctx: ServerContext): Caller {
    const capability = this.options.capability(ctx);
    let caller: Caller;
    if (this.options.era === 'modern') {
      const info = ctx.mcpReq.envelope?.[CLIENT_INFO_KEY as keyof typeof ctx.mcpReq.envelope] as unknown;
      const name = isPlainObject(info) ? short(info.name) : undefined;
      const version = isPlainObject(info) ? short(info.version) : undefined;
      caller = { kind: 'mcp', id: name ? (version ? `${name}@${version}` : name) : 'unknown-client', ...(name ? { client: name } : {}) };
    } else {
      const name = short(this.mcp.server.getClientVersion()?.name);
      caller = {
        kind: 'mcp',
        id: name ?? 'unknown-client',
        ...(name ? { client: name } : {}),
        sessionId: this.options.sessionId?.() ?? ctx.sessionId ?? this.fallbackSessionId,
      };
    }
    if (capability !== undefined) caller.capability = capability;
    const client = this.options.client?.(ctx);
    if (client) caller.token = client.name;
    return caller;
  }

  /** The tools a request is served: its client token's profile, else the endpoint's. */
  private profileOf(ctx: ServerContext): McpProfile | undefined {
    return this.options.client?.(ctx)?.profile ?? this.options.profile;
  }

  /** Whose found tools a request lists: a session's own, a stateless client's by its declared name@version. */
  private clientKey(ctx: ServerContext): string {
    const caller = this.caller(ctx);
    if (caller.sessionId !== undefined) return `session:${caller.sessionId}`;
    return caller.token !== undefined ? `token:${caller.token}` : `client:${caller.id ?? 'unknown-client'}`;
  }

  /**
   * A call through the one pipeline. `scoped`: a tool call, limited to the profile's tools (prompts
   * and skill files read skills, which every profile serves).
   */
  private invoke(
    tool: string,
    args: Record<string, unknown>,
    ctx: ServerContext,
    onProgress?: (u: ProgressUpdate) => void,
    scoped = false,
  ): Promise<ToolResult> {
    const profile = this.profileOf(ctx);
    const scope =
      scoped && profile && !servesEverything(profile)
        ? { scope: profileTools(profile, this.kernel.registry).map((t) => t.spec.name), scopeLabel: `the MCP profile ${profile.name}` }
        : {};
    const hangUp = this.options.requestSignal?.(ctx);
    const signal = hangUp ? AbortSignal.any([ctx.mcpReq.signal, hangUp]) : ctx.mcpReq.signal;
    return this.kernel.invoke({ tool, args, caller: this.caller(ctx), signal, ...(onProgress ? { onProgress } : {}) }, scope);
  }

  /** In tool-search mode, what find_tools found joins the client's list; the client is told when it grew. */
  private remember(result: ToolResult, ctx: ServerContext): void {
    if (!this.profileOf(ctx)?.search || !result.ok || result.tool !== FIND_TOOLS) return;
    const names = ((result.value as unknown as FoundToolsResult | undefined)?.tools ?? []).map((t) => t.name);
    if (!this.found.add(this.clientKey(ctx), names)) return;
    if (this.options.onFound) this.options.onFound();
    else this.notify(() => this.mcp.server.sendToolListChanged());
  }

  private async callTool(params: CallParams, ctx: ServerContext) {
    const { progressToken } = params;
    const onProgress =
      progressToken === undefined
        ? undefined
        : (update: ProgressUpdate) => {
            const p: { progressToken: string | number; progress: number; total?: number; message?: string } = { progressToken, progress: update.progress };
            if (update.total !== undefined) p.total = update.total;
            if (update.message !== undefined) p.message = update.message;
            ctx.mcpReq.notify({ method: 'notifications/progress', params: p }).catch(() => {
              // The request's stream is gone (client cancelled or disconnected): progress has no reader.
            });
          };
    this.inflight++;
    try {
      // The signal aborts on the client's cancellation, a dropped request stream, and the session closing.
      const result = await this.invoke(params.name, params.arguments, ctx, onProgress, true);
      this.remember(result, ctx);
      return this.mcp.server.projectCallToolResult(toCallToolResult(result), undefined);
    } finally {
      this.inflight--;
      this.onactivity?.();
    }
  }

  /** The loaded skills for the skills extension; each file read is a `read_skill` call through the pipeline. */
  private skillSource(): SkillSource {
    const entry = (skill: Skill): McpSkill => ({
      uri: `${SKILL_URI}${skill.name}/SKILL.md`,
      frontmatter: listedFrontmatter(skill),
      resources: listedResources(skill),
    });
    const find = (uri: string): Skill | undefined => {
      const at = parseSkillUri(uri);
      return at && at.file === 'SKILL.md' ? this.kernel.skills.loaded().find((s) => s.name === at.name) : undefined;
    };
    return {
      list: () => Promise.resolve({ skills: this.kernel.skills.loaded().map(entry) }),
      get: (uri) => Promise.resolve(((s) => (s ? entry(s) : undefined))(find(uri))),
      read: async (uri, ctx): Promise<SkillReadResult | undefined> => {
        const at = parseSkillUri(uri);
        if (!at || !this.kernel.skills.loaded().some((s) => s.name === at.name)) return undefined;
        const result = await this.invoke('read_skill', { name: at.name, file: at.file }, ctx);
        if (!result.ok) {
          if (result.error.code === 'NOT_FOUND') return undefined;
          throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${result.error.code}: ${result.error.message}`);
        }
        return { text: (result.value as { content: string }).content, mimeType: mimeTypeOf(at.file) };
      },
      listResources: (): Promise<Resource[]> =>
        Promise.resolve(
          this.kernel.skills.loaded().map((s) => ({
            uri: `${SKILL_URI}${s.name}/SKILL.md`,
            name: `${s.name}/SKILL.md`,
            description: oneLine(s.description),
            mimeType: 'text/markdown',
          })),
        ),
    };
  }
}
