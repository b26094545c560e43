import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { AuditSink } from '../audit/audit-sink.js';
import { writeFailureCause, type AuditRecord } from '../audit/audit-record.js';
import { inject, injectable } from '../di.js';
import { attachKnownSecrets, KnownSecrets, scrubPreview } from '../secrets/known-secrets.js';
import { maskArgs, maskText } from '../secrets/masking.js';
import { Clock, type ClockTimer } from '../clock.js';
import { Logger } from '../logger.js';
import { isMemoError, MemoError, toErrorInfo, type ToolErrorInfo } from '../errors.js';
import { isAutomatic, PermissionGate, type GateOutcome } from '../permissions/permission-gate.js';
import type { Prompter } from '../permissions/prompter.js';
import { WriteCapabilities } from '../permissions/write-capabilities.js';
import { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { PathSandbox } from '../sandbox/path-sandbox.js';
import type { CommandJudge } from '../sandbox/command-judge.js';
import type { AccessMode, Caller, Concern, JsonValue, ToolCallRequest, ToolContext, ToolResult } from './contract.js';
import { offeredIn } from './access-modes.js';
import { ToolRegistry, type RegisteredTool } from './tool-registry.js';
import { unmask, validateArgs } from './call-args.js';
import { auditRecord, NotJson, summarise, toJsonValue, unrecorded } from './call-results.js';
import { CallStop } from './call-stop.js';
import { itemsOf } from './call-items.js';

/** The DI token of the pipeline's per-kernel settings (PipelineOptions). */
export const PipelineOptions = Symbol('PipelineOptions');

export const DEFAULT_TOOL_TIMEOUT_MS = 120_000;

export interface PipelineOptions {
  root: string;
  sandbox: PathSandbox;
  judge: CommandJudge;
  dataDir: (packId: string) => string;
  defaultTimeoutMs?: number;
  /** Secret values scrubbed from every result, error, summary and audit line (default: this process's environment). */
  secrets?: KnownSecrets;
  /** Told when an audit line cannot be written (a disk error, another writer holding the lock for over 10 s). */
  logger?: Logger;
}

export interface InvokeOptions {
  /** Scoped mode: only these tools exist for this call (anything else is UNKNOWN_TOOL). */
  scope?: readonly string[];
  /** What the scope is, for the UNKNOWN_TOOL message (default `this mode`): `the MCP profile "vault"`. */
  scopeLabel?: string;
  /**
   * The access mode of the turn the call belongs to: a tool the mode does not offer does not exist
   * for the call (UNKNOWN_TOOL), and the handler sees the mode (`ctx.mode`).
   */
  mode?: AccessMode;
  /**
   * Who answers this call's permission prompt instead of the kernel's prompter (a CLI that reached
   * `memo serve` through its control socket answers its own calls). Used for this call only.
   */
  prompter?: Prompter;
}

/**
 * A check every call passes after its arguments are validated and before it is rate-limited or
 * anyone is asked: it throws a MemoError (typically PERMISSION_DENIED with `details.decision`) to
 * refuse the call, which is then audited like any refusal. Guards are registered by kernel parts
 * (skills' `allowed-tools`); they must be cheap and synchronous: every call runs them.
 */
export interface CallGuard {
  check(call: { tool: string; plugin: string; args: Record<string, unknown>; caller: Caller }): void;
}

/** An audit sink that can write several lines at once (the kernel's AuditLog: one lock, one write(2)). */
interface BatchingAuditSink extends AuditSink {
  appendBatch(records: readonly AuditRecord[]): unknown;
}

function canBatch(sink: AuditSink): sink is BatchingAuditSink {
  return typeof (sink as Partial<BatchingAuditSink>).appendBatch === 'function';
}

/** A sink's append that answers with a promise (it is durable once that resolves). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

function noop(): void {}

/** The gate's answer to a call it lets through by itself (see isAutomatic). */
const AUTOMATIC: GateOutcome = Object.freeze({ decision: 'auto' });

/** A finished call's audit line waiting for its group's write. */
interface QueuedLine {
  record: AuditRecord;
  name: string;
  callId: string;
  /** Set when the line could not be written (see lineLost). */
  lost?: boolean;
}

interface CallContext {
  ctx: ToolContext;
  stop: CallStop;
  /** Stops the call if the caller's signal has aborted (while nothing listens to it yet; see context). */
  checkOuter: () => void;
  release: () => void;
}

/** The tools a scoped caller may use, as an unknown tool's error names them: by name while few, else how to find them. */
function inScope(scope: readonly string[]): string {
  if (scope.length === 0) return 'available: none';
  if (scope.length <= 12) return `available: ${scope.join(', ')}`;
  return `${scope.length} tools are available${scope.includes('find_tools') ? '; find_tools searches them' : ''}`;
}

/**
 * The one invocation pipeline. Agent loop, MCP, CLI and routines all call tools through
 * `invoke`, in this order: resolve, validate, rate-limit, caller rules, permission gate, run
 * (with timeout and cancellation), audit. It never throws: every outcome is a ToolResult, and
 * every outcome is audited, refused and invalid calls included.
 */
@injectable()
export class ToolPipeline {
  private readonly shutdown = new AbortController();
  private readonly known: KnownSecrets;
  private guards: readonly CallGuard[] = [];
  /** Calls between their start and their audit line (see commitLine). */
  private running = 0;
  /** The running calls' stops, which the kernel's shutdown stops. */
  private readonly active = new Set<CallStop>();
  private auditQueue: QueuedLine[] = [];
  private auditFlush: { done: Promise<void>; resolve: () => void; immediate: NodeJS.Immediate } | null = null;

  constructor(
    @inject(ToolRegistry) private readonly registry: ToolRegistry,
    @inject(RateLimiter) private readonly limiter: RateLimiter,
    @inject(PermissionGate) private readonly gate: PermissionGate,
    @inject(WriteCapabilities) private readonly capabilities: WriteCapabilities,
    @inject(AuditSink) private readonly audit: AuditSink,
    @inject(Clock) private readonly clock: Clock,
    @inject(PipelineOptions) private readonly options: PipelineOptions,
  ) {
    this.known = options.secrets ?? new KnownSecrets();
  }

  /** Masks a message for the caller and the audit: secret shapes, the call's own secret arguments, known secrets. */
  private clean(text: string, secrets: readonly string[]): string {
    return this.known.scrub(maskText(text, secrets));
  }

  /** Adds a check every later call passes (see CallGuard); the returned function removes it. */
  addGuard(guard: CallGuard): () => void {
    this.guards = [...this.guards, guard];
    return () => {
      this.guards = this.guards.filter((g) => g !== guard);
    };
  }

  /** Aborts every running handler; later calls are refused with CANCELLED. Lines waiting for their group's write are written now. */
  close(): void {
    this.shutdown.abort();
    for (const stop of this.active) stop.stop('cancelled', new Error('shutdown'));
    void this.flushAudit();
  }

  async invoke(request: ToolCallRequest, invokeOptions: InvokeOptions = {}): Promise<ToolResult> {
    const callId = randomUUID();
    const started = performance.now();
    const ts = new Date(this.clock.now()).toISOString();
    // Tool names are at most 64 characters; a model's invented one is cut so messages and audit lines stay bounded.
    const name = (typeof request.tool === 'string' ? request.tool : String(request.tool)).slice(0, 200);
    const tool = this.registry.get(name);
    const { masked: maskedArgs, secrets } = maskArgs(request.args, tool?.spec.sensitiveArgs ?? []);
    // maskArgs made a copy: known secrets are scrubbed from it in place.
    const masked = this.known.scrubValue(maskedArgs);
    let decision = 'none';
    /** Set when a person edited the arguments before approving: the audit records the call that ran, and who edited it. */
    let edited: { by: string; maskedArgs: unknown } | undefined;
    let answeredBy: string | undefined;
    let result: ToolResult;
    let call: CallContext | undefined;

    const fail = (err: unknown): ToolResult => {
      const info: ToolErrorInfo = isMemoError(err)
        ? toErrorInfo(err)
        : { code: 'TOOL_FAILED', message: `${name} failed: ${(err as Error)?.message ?? String(err)}` };
      info.message = this.clean(info.message, secrets);
      if (info.details) info.details = JSON.parse(this.clean(JSON.stringify(info.details), secrets)) as Record<string, unknown>;
      if (tool && info.plugin === undefined) info.plugin = tool.pack.id;
      if (info.tool === undefined) info.tool = name;
      return { ok: false, callId, tool: name, error: info, durationMs: performance.now() - started };
    };

    this.running++;
    try {
      if (this.shutdown.signal.aborted) throw new MemoError('CANCELLED', 'The kernel is shutting down; the call was not run.');
      // An MCP caller presenting an agent turn's capability (an agent CLI run as a backend) is in that turn's mode.
      const mode = invokeOptions.mode ?? (request.caller.kind === 'mcp' ? this.capabilities.modeOf(request.caller.capability) : undefined);
      if (!tool || (invokeOptions.scope && !invokeOptions.scope.includes(name)) || (mode && !offeredIn(tool.spec, mode))) {
        const available =
          invokeOptions.scope ??
          (mode && mode !== 'computer'
            ? this.registry
                .list()
                .filter((t) => offeredIn(t.spec, mode))
                .map((t) => t.spec.name)
            : undefined);
        const where = invokeOptions.scope && invokeOptions.scopeLabel ? invokeOptions.scopeLabel : 'this mode';
        throw new MemoError('UNKNOWN_TOOL', `There is no tool named "${name}"${available ? ` in ${where} (${inScope(available)})` : ''}.`, { tool: name });
      }
      if (!this.registry.isEnabled(tool.pack.id)) {
        throw new MemoError('TOOL_DISABLED', `${name} belongs to the pack "${tool.pack.id}", which is disabled (memo plugins enable ${tool.pack.id}).`, {
          tool: name,
          plugin: tool.pack.id,
        });
      }
      const args = validateArgs(tool, request.args);
      // An MCP caller presenting an agent turn's capability (an agent CLI run as a backend) is that
      // turn: what the turn has activated (a skill's allowed-tools) holds for its calls too.
      if (request.caller.turn === undefined && request.caller.kind === 'mcp' && request.caller.capability !== undefined) {
        const turn = this.capabilities.turnOf(request.caller.capability);
        if (turn !== undefined) request.caller.turn = turn;
      }
      for (const guard of this.guards) guard.check({ tool: name, plugin: tool.pack.id, args, caller: request.caller });
      // Limits shared through a database are checked there; in memory nothing is awaited.
      if (this.limiter.isShared) await this.limiter.admitShared(name, args, request.caller);
      else this.limiter.admit(name, args, request.caller);
      // Only an MCP caller's write needs the (asynchronous) capability check: no extra tick for the rest.
      // Without a live capability it is an external write: refused, or asked every time when a person lets that client ask.
      const external = request.caller.kind === 'mcp' && tool.spec.effect !== 'read' ? await this.checkCaller(tool, request.caller) : undefined;
      call = this.context(tool, request, callId, request.signal, invokeOptions.scope, mode);
      const ctx = call;
      // The tool's own judgement comes before anyone is asked: a refusal ends the call here, and a
      // concern makes the gate ask whatever is stored.
      const judged = tool.assess ? await tool.assess(args, ctx.ctx) : null;
      ctx.checkOuter();
      if (judged?.verdict === 'answer') {
        // The tool answers the call itself (a failure its callers expect in the result): nobody is
        // asked and nothing runs; the answer is recorded like any result.
        await Promise.resolve();
        decision = 'answered';
        const value = this.known.scrubValue(toJsonValue(judged.value));
        result = { ok: true, callId, tool: name, value, summary: this.clean(summarise(value), secrets), durationMs: performance.now() - started };
      } else {
        const concern = judged;
        let outcome: GateOutcome;
        if (external === undefined && isAutomatic(tool.spec, concern) && !this.gate.deniesOutright(name)) {
          // Nobody to ask, but still one turn: the handler never runs inside the caller's own invoke(),
          // so a caller that aborts right after starting the call is heard before it runs.
          await Promise.resolve();
          outcome = AUTOMATIC;
        } else outcome = await this.ask(tool, args, masked, secrets, callId, concern, ctx, invokeOptions, external);
        decision = outcome.decision;
        answeredBy = outcome.answeredBy;
        const runArgs = outcome.edited?.args ?? args;
        if (outcome.edited) edited = { by: outcome.edited.by, maskedArgs: outcome.edited.maskedArgs };
        // The result is the pipeline's own copy (toJsonValue): known secrets are scrubbed from it in place.
        const value = this.known.scrubValue(await this.run(tool, runArgs, ctx));
        const items = itemsOf(tool, value, runArgs, ctx.ctx, this.options.logger);
        result = {
          ok: true,
          callId,
          tool: name,
          value,
          summary: this.clean(summarise(value), secrets),
          durationMs: performance.now() - started,
          ...(items ? { items } : {}),
        };
      }
    } catch (err) {
      const d = isMemoError(err) ? err.details?.decision : undefined;
      if (typeof d === 'string') decision = d;
      const by = isMemoError(err) ? err.details?.answeredBy : undefined;
      if (typeof by === 'string') answeredBy = by;
      result = fail(err);
    } finally {
      call?.release();
    }

    this.running--;
    let record: AuditRecord;
    try {
      // An edited call's line keeps both: the arguments that ran and those the caller asked for.
      record = auditRecord(result, ts, request.caller, tool, edited ? edited.maskedArgs : masked, decision, {
        answeredBy,
        editedBy: edited?.by,
        ...(edited ? { askedArgs: masked } : {}),
      });
    } catch (err) {
      this.lineLost({ name, callId }, err);
      return unrecorded(result);
    }
    const line: QueuedLine = { record, name, callId };
    const written = this.commitLine(line);
    if (written) await written;
    // The caller learns its arguments were edited (an agent turn tells the model and shows the person).
    if (edited) result = { ...result, edited: { by: edited.by, args: edited.maskedArgs } };
    // An agent CLI's call presents its turn's capability: the turn learns what the result named.
    if (request.caller.kind === 'mcp' && request.caller.capability !== undefined)
      this.capabilities.report(request.caller.capability, { tool: name, ok: result.ok, ...(result.ok && result.items ? { items: result.items } : {}) });
    return line.lost ? unrecorded(result) : result;
  }

  /**
   * Writes a finished call's audit line before the call returns (durable per call: write(2), no
   * fsync). Group commit: while other calls are running, the line waits for the end of this
   * event-loop turn, and every call that finishes in the same turn shares one lock and one write
   * (the sink's appendBatch). A call with nothing else running, the usual case of one caller, is
   * written at once, with no wait. A sink whose append returns a promise (the audit trail on
   * PostgreSQL) is waited for: the call returns once its line is committed. Returns what to wait
   * for, or undefined when it is written.
   */
  private commitLine(line: QueuedLine): Promise<void> | undefined {
    this.auditQueue.push(line);
    if (this.running > 0 && !this.shutdown.signal.aborted) {
      if (!this.auditFlush) {
        let resolve!: () => void;
        const done = new Promise<void>((r) => (resolve = r));
        this.auditFlush = { done, resolve, immediate: setImmediate(() => void this.flushAudit()) };
      }
      return this.auditFlush.done;
    }
    return this.flushAudit();
  }

  /** Hands the queued lines to the sink; returns undefined when they are written, or what to wait for (an asynchronous sink). */
  private flushAudit(): Promise<void> | undefined {
    const batch = this.auditQueue;
    const flush = this.auditFlush;
    this.auditQueue = [];
    this.auditFlush = null;
    if (flush) clearImmediate(flush.immediate);
    let pending: Promise<void> | undefined;
    try {
      if (batch.length === 0) return undefined;
      if (batch.length > 1 && canBatch(this.audit)) {
        try {
          const written = this.audit.appendBatch(batch.map((l) => l.record));
          if (isThenable(written)) pending = this.settle(written, batch);
        } catch (err) {
          for (const l of batch) this.lineLost(l, err);
        }
        return pending;
      }
      for (const l of batch) {
        try {
          const written = this.audit.append(l.record);
          if (isThenable(written)) pending = pending ? Promise.all([pending, this.settle(written, [l])]).then(noop) : this.settle(written, [l]);
        } catch (err) {
          this.lineLost(l, err);
        }
      }
      return pending;
    } finally {
      if (flush) {
        if (pending) void pending.then(flush.resolve);
        else flush.resolve();
      }
    }
  }

  /** An asynchronous sink's answer: a rejection is a lost line, as a throw is. */
  private settle(written: PromiseLike<unknown>, lines: readonly QueuedLine[]): Promise<void> {
    return Promise.resolve(written).then(noop, (err: unknown) => {
      for (const l of lines) this.lineLost(l, err);
    });
  }

  /**
   * invoke never throws: the call has happened and its caller gets its result, whose summary says the
   * line is missing (see unrecorded); the person running the kernel is told loudly that the trail has
   * a hole (`memo audit verify` shows it too).
   */
  private lineLost(line: { name: string; callId: string; lost?: boolean }, err: unknown): void {
    line.lost = true;
    this.options.logger?.error(`the audit line of ${line.name} (call ${line.callId}) could not be written: ${writeFailureCause(err)}`);
  }

  /** Puts a call the gate does not let through by itself (see isAutomatic) to the permission gate. */
  private ask(
    tool: RegisteredTool,
    args: Record<string, unknown>,
    masked: unknown,
    secrets: readonly string[],
    callId: string,
    concern: Concern | null,
    ctx: CallContext,
    invokeOptions: InvokeOptions,
    external: string | undefined,
  ): Promise<GateOutcome> {
    // The network a command would get is a kernel-owned fact the person reads (domains only, as the judge found them).
    const networkOf = (c: Concern) => {
      const d = c.network?.domains;
      if (d === 'any') return { network: { domains: 'any' as const } };
      return Array.isArray(d) ? { network: { domains: d.filter((x) => typeof x === 'string').map((x) => this.clean(x, secrets)) } } : {};
    };
    const cleanConcern = (c: Concern | null) =>
      c ? { verdict: 'ask' as const, rule: String(c.rule), reason: this.clean(String(c.reason), secrets), ...networkOf(c) } : null;
    const previewOf = (a: Record<string, unknown>) => async () => {
      const p = tool.preview ? await tool.preview(a, ctx.ctx) : null;
      // Every part of it (text, facts, quoted text) is scrubbed, whichever the tool gave.
      return p && typeof p === 'object' ? scrubPreview(p, this.known) : p;
    };
    return this.gate.check({
      callId,
      tool: tool.spec.name,
      plugin: tool.pack.id,
      danger: tool.spec.danger,
      effect: tool.spec.effect,
      ...(tool.spec.confirm ? { confirm: tool.spec.confirm } : {}),
      ...(concern ? { concern: cleanConcern(concern) } : {}),
      ...(external !== undefined ? { external } : {}),
      maskedArgs: masked,
      // The prompter learns who calls, not the caller's write capability.
      caller: ctx.ctx.caller,
      // Read only by a prompt that waits for a person: most calls never make the signal (see CallStop).
      get signal() {
        return ctx.ctx.signal;
      },
      ...(invokeOptions.prompter ? { prompter: invokeOptions.prompter } : {}),
      preview: previewOf(args),
      // A tool that accepts edits: the edited call goes through the same checks as the agent's
      // (schema, the tool's own judgement, a fresh preview) before it is put to the person again.
      ...(tool.spec.editable
        ? {
            revise: async (edit: Record<string, unknown>) => {
              // The person saw masked arguments: a value left as "[masked]" means "keep what the agent sent".
              const revised = validateArgs(tool, unmask(edit, args));
              const judgedAgain = tool.assess ? await tool.assess(revised, ctx.ctx) : null;
              // An edit the tool would only answer (it cannot run) is not a call to approve.
              if (judgedAgain?.verdict === 'answer')
                throw new MemoError('VALIDATION', `The edited call cannot run: ${summarise(toJsonValue(judgedAgain.value))}`);
              const again = judgedAgain;
              return {
                args: revised,
                maskedArgs: this.known.scrubValue(maskArgs(revised, tool.spec.sensitiveArgs ?? []).masked),
                concern: cleanConcern(again),
                preview: previewOf(revised),
              };
            },
          }
        : {}),
    });
  }

  /**
   * An MCP caller's write: with a live write capability it is that agent turn's call (undefined);
   * without one it is an external client's write, refused unless a person lets the client ask
   * (`memo permissions external-writes`), and then put to a person every time: returns the name
   * the client declares, for the question.
   */
  private async checkCaller(tool: RegisteredTool, caller: Caller): Promise<string | undefined> {
    const conversation = await this.capabilities.check(caller.capability);
    if (conversation !== null) {
      caller.conversationId = conversation;
      return undefined;
    }
    if (this.gate.externalWritesFor(caller.client)) return caller.client ?? caller.id ?? 'unknown-client';
    const name = caller.client === undefined ? '' : ` --client ${JSON.stringify(caller.client)}`;
    throw new MemoError(
      'PERMISSION_DENIED',
      `${tool.spec.name} changes things, and writes need a running Memo agent turn: external MCP clients may only use read tools. A person can let this client ask for writes, each one approved in the approvals inbox: memo permissions external-writes on${name} (or in the web console's Permissions).`,
      {
        tool: tool.spec.name,
        plugin: tool.pack.id,
        details: { decision: 'deny:caller' },
      },
    );
  }

  private context(
    tool: RegisteredTool,
    request: ToolCallRequest,
    callId: string,
    outer: AbortSignal | undefined,
    scope?: readonly string[],
    mode?: AccessMode,
  ): CallContext {
    const stop = new CallStop();
    // Handlers learn who calls, never the caller's write capability (a credential).
    const { capability: _capability, ...caller } = request.caller;
    const ctx: ToolContext = {
      // Whoever reads the signal (a handler, a waiting prompt) gets one that follows the caller's from now on.
      get signal() {
        listenToOuter();
        return stop.signal;
      },
      caller,
      callId,
      tool: tool.spec.name,
      plugin: tool.pack.id,
      root: this.options.root,
      sandbox: this.options.sandbox,
      judge: this.options.judge,
      dataDir: this.options.dataDir(tool.pack.id),
      config: tool.pack.config(),
      progress: (update) => request.onProgress?.(typeof update.message === 'string' ? { ...update, message: this.known.scrub(update.message) } : update),
      ...(scope ? { scope } : {}),
      ...(mode ? { mode } : {}),
    };
    // Packs check text against the kernel's known secrets through their context (web_search's query).
    attachKnownSecrets(ctx, this.known);
    // The caller's signal and the kernel's shutdown stop the handler (and a waiting permission
    // prompt), for the whole call.
    if (this.shutdown.signal.aborted) stop.stop('cancelled', new Error('shutdown'));
    this.active.add(stop);
    // A listener on the caller's signal costs more than the rest of a small call's bookkeeping (an
    // EventTarget: about 8 us here, 3x that beside a busy client). A call that ends within this turn
    // of the event loop needs none: the caller's signal is read where the call could still stop
    // (before the gate, before the handler). One still running at the end of the turn, or whose own
    // signal someone reads, listens from then on; a caller who aborted in between is heard then.
    const forward = () => outer && stop.stop('cancelled', outer.reason);
    const checkOuter = () => {
      if (outer?.aborted) forward();
    };
    let listening = false;
    let later: NodeJS.Immediate | null = null;
    const listenToOuter = () => {
      if (listening || !outer) return;
      listening = true;
      if (later) clearImmediate(later);
      later = null;
      if (outer.aborted) forward();
      else outer.addEventListener('abort', forward, { once: true });
    };
    checkOuter();
    if (outer && !outer.aborted) later = setImmediate(listenToOuter);
    const release = () => {
      if (later) clearImmediate(later);
      later = null;
      // A caller may reuse one signal for many calls: drop the listener when this call ends.
      if (listening) outer?.removeEventListener('abort', forward);
      listening = true;
      this.active.delete(stop);
    };
    return { ctx, stop, checkOuter, release };
  }

  private run(tool: RegisteredTool, args: Record<string, unknown>, { ctx, stop, checkOuter }: CallContext): Promise<JsonValue> {
    const name = tool.spec.name;
    const timeoutMs = tool.spec.timeoutMs ?? this.options.defaultTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    return new Promise<JsonValue>((resolve, reject) => {
      let settled = false;
      let timer: ClockTimer | null = null;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        if (timer) this.clock.clearTimeout(timer);
        stop.onStop(null);
        fn();
      };
      // The caller or shutdown stops the call, or the tool's timeout does (and the handler learns
      // through its signal that its time is up): the call ends now, whatever the handler does.
      const onStop = () => {
        if (stop.cause !== 'timeout') return finish(() => reject(new MemoError('CANCELLED', `${name} was cancelled.`, { tool: name, plugin: tool.pack.id })));
        finish(() =>
          reject(new MemoError('TIMEOUT', `${name} did not finish within ${timeoutMs / 1000} s and was stopped.`, { tool: name, plugin: tool.pack.id })),
        );
      };
      checkOuter();
      if (stop.stopped) return onStop();
      stop.onStop(onStop);
      if (Number.isFinite(timeoutMs)) {
        timer = this.clock.setTimeout(
          () => stop.stop('timeout', new DOMException(`The deadline of ${timeoutMs} ms passed.`, 'TimeoutError')),
          Math.max(0, timeoutMs),
        );
      }

      let pending: unknown;
      try {
        pending = tool.run(args, ctx);
      } catch (err) {
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- forwards whatever the handler threw, Error or not, to the one rejection path below
        pending = Promise.reject(err);
      }
      Promise.resolve(pending).then(
        (value) =>
          finish(() => {
            try {
              resolve(toJsonValue(value === undefined ? null : value));
            } catch (err) {
              if (!(err instanceof NotJson)) throw err;
              reject(
                new MemoError('TOOL_FAILED', `${name} returned ${err.message}, which cannot be passed on as a tool result.`, {
                  tool: name,
                  plugin: tool.pack.id,
                }),
              );
            }
          }),
        (err: unknown) =>
          finish(() => {
            if (isMemoError(err)) reject(err);
            else reject(new MemoError('TOOL_FAILED', `${name} failed: ${(err as Error)?.message ?? String(err)}`, { tool: name, plugin: tool.pack.id }));
          }),
      );
    });
  }
}
