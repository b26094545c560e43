/**
 * Chat in the web console: conversations of the kernel's (encrypted) conversation store, each turn
 * run by `runChatTurn` (the same loop and store as `memo chat`), its steps reported live to the
 * console's event stream. A turn runs as the agent of its conversation; a call that needs approval
 * waits in the broker and the console's inbox answers it (the chat view says which step waits).
 */
import { consoleView, type ConsoleApprovalView } from './approval-answers.js';
import { checkMentions } from './mention-search.js';
import { randomUUID } from 'node:crypto';
import {
  approvalView,
  isLocalProvider,
  maskArgs,
  type AgentEvent,
  type AccessMode,
  type AgentStep,
  type ApprovalEvent,
  type ChatMessage,
  type ChatTurnResult,
  type ConversationInfo,
  type ItemRef,
  type Logger,
  type ModelProvider,
  type PackAdministration,
  type PackApi,
  type ProviderConfig,
  type StopReason,
  type StoredMessage,
  type ToolActivity,
} from 'memo-kernel/pack';

/** The longest message the console sends in one turn (a pasted page fits). */
const MAX_MESSAGE_CHARS = 100_000;
/** The most of a tool's raw result the page is sent (the model got it whole). */
const MAX_RAW_RESULT_CHARS = 16_000;

/** How a turn request names an agent CLI as its provider: `cli:claude`. */
const CLI_PREFIX = 'cli:';

/** The turn's access mode, resolved: "agent" in a request means the stored default. */
export type ChatMode = AccessMode;

/** One step of the Agent Run box: running until its tool ends, then the step the loop reported. */
export interface StepView {
  iteration: number;
  tool: string;
  /** Masked and shortened (the loop's own short form). */
  args: Record<string, unknown>;
  state: 'running' | AgentStep['outcome'];
  code?: string;
  summary?: string;
  durationMs?: number;
  /** After the turn: the call's arguments as the model gave them (masked) and the result the model was given. */
  raw?: { args: unknown; result: string; truncated: boolean };
  /** A person edited the arguments before approving: `args` are those that ran, `askedArgs` the model's. */
  edited?: { by: string; askedArgs: Record<string, unknown> };
  /** The items the result named (linked in the reply). */
  items?: ItemRef[];
}

export interface TurnView {
  id: string;
  conversationId: string;
  message: string;
  provider: string;
  model: string;
  mode: ChatMode;
  startedAt: string;
  state: 'running' | StopReason;
  steps: StepView[];
  /** Approval requests of this conversation waiting now: answered in the turn itself or in the inbox (one broker). */
  waiting: Array<{ id: string; tool: string; approval: ConsoleApprovalView & { expiresInMs: number } }>;
  /** The reply arriving now, while the model streams it. */
  partial?: string;
  answer?: string;
  error?: string;
  reasoning?: string[];
  notices: string[];
  durationMs?: number;
}

export interface TurnRequest {
  message?: unknown;
  provider?: unknown;
  model?: unknown;
  mode?: unknown;
  /** Items picked in the @mention picker: [{type, id, title}]. */
  mentions?: unknown;
}

export interface ChatRefusal {
  status: number;
  code: string;
  message: string;
}

interface Running {
  view: TurnView;
  stop: AbortController;
  done: Promise<void>;
}

type Listener = (view: TurnView | { conversationId: string; title: string }, name: 'chat' | 'chat-title') => void;

/** The arguments and result of each step of a finished turn, matched in call order (the loop runs calls in the order the model gave them). */
function rawResults(messages: readonly ChatMessage[]): Array<{ args: unknown; result: string; truncated: boolean }> {
  const results = new Map<string, string>();
  for (const m of messages) if (m.role === 'tool') results.set(m.toolCallId, m.content);
  const out: Array<{ args: unknown; result: string; truncated: boolean }> = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const call of m.toolCalls ?? []) {
      const result = results.get(call.id) ?? '';
      out.push({
        args: maskArgs(call.arguments).masked,
        result: result.length > MAX_RAW_RESULT_CHARS ? result.slice(0, MAX_RAW_RESULT_CHARS) : result,
        truncated: result.length > MAX_RAW_RESULT_CHARS,
      });
    }
  }
  return out;
}

function notices(r: ChatTurnResult): string[] {
  const out: string[] = [];
  for (const m of r.mentions.references) out.push(`@${m.mention} is the ${m.type} "${m.title}".`);
  for (const m of r.mentions.unresolved) out.push(`@${m.mention} was sent as plain text: ${m.reason}`);
  if (r.switchedFrom)
    out.push(`This conversation continues with another model; earlier replies came from ${r.switchedFrom.provider ?? '?'}/${r.switchedFrom.model ?? '?'}.`);
  if (r.compaction) out.push(`The ${r.compaction.replaced} oldest message(s) were compacted into a summary to fit the model's window.`);
  else if (r.compactionError) out.push(`Compacting the older conversation failed: ${r.compactionError}`);
  return out;
}

export class ConsoleChat {
  private readonly running = new Map<string, Running>();
  private readonly listeners = new Set<Listener>();

  constructor(
    private readonly admin: PackAdministration,
    private readonly settings: PackApi['providers']['settings'],
    private readonly logger?: Logger,
    /** The kernel's clock: a waiting request's countdown. */
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A broker event, from the console's watch of the broker (held only while a page is open: the
   * chat must not make the broker count as attended by itself). A step that waits for a person is
   * named in its turn, so the chat view links to the inbox while it waits.
   */
  noteApproval(event: ApprovalEvent): void {
    if (event.kind === 'asked') {
      const v = approvalView(event.approval);
      const turn = [...this.running.values()].find((r) => r.view.conversationId === v.caller.conversationId && v.caller.kind === 'agent');
      if (!turn) return;
      const approval = { ...consoleView(event.approval), expiresInMs: Math.max(0, Date.parse(v.expiresAt) - this.now()) };
      turn.view.waiting = [...turn.view.waiting.filter((w) => w.id !== v.id), { id: v.id, tool: v.tool, approval }];
      this.emit(turn.view);
      return;
    }
    for (const turn of this.running.values()) {
      if (!turn.view.waiting.some((w) => w.id === event.id)) continue;
      turn.view.waiting = turn.view.waiting.filter((w) => w.id !== event.id);
      this.emit(turn.view);
    }
  }

  /** Tells `listener` of every change to a turn (and of generated titles) from now on. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(view: TurnView): void {
    for (const l of this.listeners) l(view, 'chat');
  }

  /**
   * The providers a turn may use (keys never included), the active one, and the agent CLIs: each
   * listed whether it was found or not (a missing one says why), as `cli:<id>`.
   */
  async options() {
    const settings = this.settings;
    const clis = await this.admin.agentClis.detect().catch((err: unknown) => {
      this.logger?.warn(`console: the agent CLIs could not be detected: ${(err as Error).message}`);
      return [];
    });
    return {
      providers: settings.list().map((p) => ({ name: p.name, kind: p.kind, model: p.model ?? null })),
      active: settings.active()?.name ?? null,
      webSearch: this.admin.tools().some((t) => t.spec.name === 'web_search'),
      clis: clis.map((c) => ({ ...c, name: `${CLI_PREFIX}${c.id}` })),
    };
  }

  async conversations(limit = 50): Promise<Array<ConversationInfo & { running: boolean }>> {
    const list = await this.admin.conversations.list(limit);
    return list.map((c) => ({ ...c, running: this.running.has(c.id) }));
  }

  async create(): Promise<ConversationInfo> {
    const active = this.settings.active();
    return this.admin.conversations.create({ provider: active?.name ?? null, model: active?.model ?? null });
  }

  /** A conversation as the page shows it: its messages (reasoning beside its reply) and the turn running now, if any. */
  async transcript(id: string): Promise<{ info: ConversationInfo; messages: unknown[]; activity: ToolActivity[]; running: TurnView | null } | null> {
    const store = this.admin.conversations;
    if (!(await store.exists(id))) return null;
    const info = await store.info(id);
    // A host's own store may keep only the history the model is sent.
    const messages: StoredMessage[] = store.messages
      ? await store.messages(id)
      : (await store.history(id)).map((m, seq) => ({ seq, role: m.role, content: m.content, provider: null, model: null, tools: [], reasoning: null }));
    return {
      info,
      messages: messages.map((m) => ({
        seq: m.seq,
        role: m.role,
        content: m.role === 'tool' && m.content.length > MAX_RAW_RESULT_CHARS ? m.content.slice(0, MAX_RAW_RESULT_CHARS) : m.content,
        provider: m.provider,
        model: m.model,
        tools: m.tools,
        reasoning: m.reasoning,
      })),
      // Each stored step names the turn it belongs to by the seq of that turn's message.
      activity: await store.activity(id),
      running: this.running.get(id)?.view ?? null,
    };
  }

  async remove(id: string): Promise<ChatRefusal | null> {
    if (this.running.has(id)) return { status: 409, code: 'BUSY', message: 'A turn is running in this conversation: stop it first.' };
    if (!(await this.admin.conversations.delete(id))) return { status: 404, code: 'NOT_FOUND', message: `There is no conversation ${id}.` };
    return null;
  }

  /** Starts a turn; it runs on after this returns, and reports itself through the listeners. */
  async start(conversationId: string, body: TurnRequest): Promise<TurnView | ChatRefusal> {
    const message = typeof body.message === 'string' ? body.message.trim() : '';
    if (!message) return { status: 400, code: 'BAD_REQUEST', message: 'Send {"message": "..."}: the message must not be empty.' };
    if (message.length > MAX_MESSAGE_CHARS) return { status: 413, code: 'BAD_REQUEST', message: `The message is over ${MAX_MESSAGE_CHARS} characters.` };
    // "agent" (and no mode) is the stored default access mode, as before this API knew the others.
    const asked = body.mode === undefined || body.mode === 'agent' ? this.settings.defaultMode() : body.mode;
    if (asked !== 'vault' && asked !== 'computer' && asked !== 'web')
      return { status: 400, code: 'BAD_REQUEST', message: '"mode" must be "vault", "computer", "web" or "agent" (the default access mode).' };
    const mode: ChatMode = asked;
    const mentioned = checkMentions(body.mentions);
    if (typeof mentioned === 'string') return { status: 400, code: 'BAD_REQUEST', message: mentioned };
    if (body.provider !== undefined && typeof body.provider !== 'string') return { status: 400, code: 'BAD_REQUEST', message: '"provider" must be a name.' };
    if (body.model !== undefined && (typeof body.model !== 'string' || body.model.length > 200))
      return { status: 400, code: 'BAD_REQUEST', message: '"model" must be a model name.' };
    if (!(await this.admin.conversations.exists(conversationId)))
      return { status: 404, code: 'NOT_FOUND', message: `There is no conversation ${conversationId}.` };
    if (this.running.has(conversationId)) return { status: 409, code: 'BUSY', message: 'A turn is already running in this conversation.' };
    if (typeof body.provider === 'string' && body.provider.startsWith(CLI_PREFIX))
      return this.startCli(conversationId, body.provider.slice(CLI_PREFIX.length), message, mode, body, mentioned);
    const settings = this.settings;
    const config = body.provider ? settings.get(body.provider) : settings.active();
    if (!config)
      return body.provider
        ? { status: 404, code: 'NOT_FOUND', message: `There is no provider "${body.provider}".` }
        : { status: 409, code: 'NO_PROVIDER', message: 'No provider is configured: add one on the Providers page.' };
    const model = (typeof body.model === 'string' && body.model.trim()) || config.model;
    if (!model) return { status: 400, code: 'NO_MODEL', message: `Provider ${config.name} has no default model: choose one.` };
    let provider: ModelProvider;
    try {
      provider = this.admin.providers.create(config);
    } catch (err) {
      return { status: 409, code: 'PROVIDER_UNAVAILABLE', message: (err as Error).message };
    }
    return this.begin(conversationId, message, mode, config.name, model, provider, config, mentioned);
  }

  /**
   * A turn through an agent CLI: Vault only or Computer access (Web search only offers it more than
   * web_search, so it is refused, as memo chat refuses it). The CLI must be installed now; its model
   * is its own default unless one is named.
   */
  private async startCli(
    conversationId: string,
    id: string,
    message: string,
    mode: ChatMode,
    body: TurnRequest,
    mentioned: ItemRef[],
  ): Promise<TurnView | ChatRefusal> {
    if (mode === 'web')
      return { status: 400, code: 'BAD_REQUEST', message: 'Web search only does not apply to an agent CLI: choose Vault only or Computer access.' };
    const found = (await this.admin.agentClis.detect()).find((c) => c.id === id);
    if (!found) return { status: 404, code: 'NOT_FOUND', message: `There is no agent CLI "${id.slice(0, 40)}" (claude, codex or agy).` };
    if (!found.found) return { status: 409, code: 'PROVIDER_UNAVAILABLE', message: `${found.label} is not available: ${found.reason ?? 'not found'}.` };
    let provider: ModelProvider;
    try {
      provider = this.admin.agentClis.provider(id, mode === 'computer' ? 'computer' : 'vault');
    } catch (err) {
      return { status: 409, code: 'PROVIDER_UNAVAILABLE', message: (err as Error).message };
    }
    const model = typeof body.model === 'string' ? body.model.trim() : '';
    return this.begin(conversationId, message, mode, `${CLI_PREFIX}${id}`, model, provider, null, mentioned);
  }

  /** Registers a turn as running and starts it; it runs on after this returns. */
  private begin(
    conversationId: string,
    message: string,
    mode: ChatMode,
    providerName: string,
    model: string,
    provider: ModelProvider,
    config: ProviderConfig | null,
    mentioned: ItemRef[],
  ): TurnView {
    const view: TurnView = {
      id: randomUUID(),
      conversationId,
      message,
      provider: providerName,
      model,
      mode,
      startedAt: new Date().toISOString(),
      state: 'running',
      steps: [],
      waiting: [],
      notices: [],
    };
    const stop = new AbortController();
    const running: Running = { view, stop, done: Promise.resolve() };
    this.running.set(conversationId, running);
    running.done = this.run(running, provider, config, mentioned);
    this.emit(view);
    return view;
  }

  /** Stops a running turn (its signal aborts: a waiting approval is withdrawn, a model request cancelled). */
  stop(turnId: string): boolean {
    const turn = [...this.running.values()].find((r) => r.view.id === turnId);
    if (!turn) return false;
    turn.stop.abort(new Error('stopped from the console'));
    return true;
  }

  private async run(turn: Running, provider: ModelProvider, config: ProviderConfig | null, mentioned: ItemRef[]): Promise<void> {
    const { view } = turn;
    const started = Date.now();
    // Streamed text goes to the page at most every 80 ms (a reply arrives in many small pieces).
    let flush: NodeJS.Timeout | undefined;
    const onEvent = (e: AgentEvent) => {
      if (e.type === 'text_delta') {
        view.partial = (view.partial ?? '') + e.text;
        flush ??= setTimeout(() => {
          flush = undefined;
          this.emit(view);
        }, 80);
        return;
      }
      if (e.type === 'model_call') {
        // A new reply: the text of the previous one (before its tool calls) is not the answer.
        if (view.partial === undefined) return;
        delete view.partial;
      } else if (e.type === 'tool_start') view.steps.push({ iteration: e.iteration, tool: e.tool, args: e.args, state: 'running' });
      else if (e.type === 'tool_end') {
        const step = view.steps.findLast((s) => s.state === 'running' && s.tool === e.step.tool);
        const done: StepView = {
          iteration: e.step.iteration,
          tool: e.step.tool,
          args: e.step.args,
          state: e.step.outcome,
          ...(e.step.code ? { code: e.step.code } : {}),
          summary: e.step.summary,
          durationMs: e.step.durationMs,
          ...(e.step.edited ? { edited: e.step.edited } : {}),
          ...(e.step.items ? { items: e.step.items } : {}),
        };
        if (step) Object.assign(step, done);
        else view.steps.push(done);
      } else if (e.type === 'backend')
        view.notices.push(
          `${e.label}${e.version ? ` ${e.version}` : ''} runs this turn with ${e.access === 'computer' ? 'Computer access (its own file, shell and web tools too, not gated by Memo)' : "Memo's Vault tools only"}.`,
        );
      else if (e.type === 'compaction') view.notices.push(`The ${e.replaced} oldest message(s) were compacted into a summary to fit the model's window.`);
      else return;
      this.emit(view);
    };
    try {
      let toolsEnabled = true;
      // A model on this machine is checked for tool calling first, as memo chat does.
      if (config && view.mode !== 'web' && (provider.local === true || isLocalProvider(config))) {
        const verdict = await this.admin.providers.probe(provider, config, view.model, { signal: turn.stop.signal });
        if (!verdict.toolCalling) {
          toolsEnabled = false;
          view.notices.push(`${view.model} cannot call tools (${verdict.reason}): chatting without tools.`);
        }
      }
      const r = await this.admin.chatTurn({
        provider,
        model: view.model,
        conversationId: view.conversationId,
        userMessage: view.message,
        systemPrompt: this.admin.systemPrompt(view.mode === 'web' ? 'web' : 'agent'),
        // Replies stream: their text reaches the page as it arrives.
        stream: true,
        mode: view.mode,
        toolsEnabled,
        signal: turn.stop.signal,
        sessionId: `console:${view.conversationId}`,
        onEvent,
        ...(mentioned.length ? { mentioned } : {}),
      });
      const raw = rawResults(r.messages);
      view.steps.forEach((s, i) => {
        if (raw[i]) s.raw = raw[i];
      });
      view.state = r.stopReason;
      view.answer = r.answer;
      if (r.error) view.error = r.error;
      if (r.reasoning.length) view.reasoning = r.reasoning.map((t) => t.text);
      view.notices.push(...notices(r));
      if (r.title)
        void r.title.then((title) => {
          if (title) for (const l of this.listeners) l({ conversationId: view.conversationId, title }, 'chat-title');
        });
    } catch (err) {
      view.state = turn.stop.signal.aborted ? 'cancelled' : 'error';
      view.error = turn.stop.signal.aborted ? 'The turn was stopped.' : (err as Error).message;
      this.logger?.warn(`console: a chat turn failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(flush);
      delete view.partial;
      view.waiting = [];
      view.durationMs = Date.now() - started;
      this.running.delete(view.conversationId);
      this.emit(view);
    }
  }

  /** Stops every running turn and waits for each to be stored (the kernel shuts down next). */
  async close(): Promise<void> {
    const all = [...this.running.values()];
    for (const r of all) r.stop.abort(new Error('memo serve is stopping'));
    await Promise.allSettled(all.map((r) => r.done));
  }
}
