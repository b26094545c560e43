import { Clock } from '../clock.js';
import { inject, injectable } from '../di.js';
import { isMemoError, MemoError } from '../errors.js';
import { toDisposable, type Disposable } from '../disposable.js';
import type { Caller, Concern, Danger, Effect, Preview } from '../tools/contract.js';
import { ApprovalBroker } from './approval-broker.js';
import { PermissionStore } from './permission-store.js';
import { answerMinutes, type ApprovalFace, type PermissionAnswer, type Prompter } from './prompter.js';

/** What an accepted edit turns the call into: checked against the schema, assessed and previewed again. */
export interface RevisedCall {
  args: Record<string, unknown>;
  maskedArgs: unknown;
  concern: Concern | null;
  preview: () => Promise<Preview | null>;
}

export interface GateCall {
  callId: string;
  tool: string;
  plugin: string;
  danger: Danger;
  effect: Effect;
  confirm?: 'always';
  /** The tool's own judgement of this call (e.g. the command judge's `ask`): asked every time. */
  concern?: Concern | null;
  /**
   * An external MCP client's write, let through to a person by `memo permissions external-writes`:
   * the name the client declares. Asked every time, allow-once or deny-once only; nothing stored,
   * no session grant and no always-allow answers it (a stored deny still does).
   */
  external?: string;
  maskedArgs: unknown;
  caller: Caller;
  signal: AbortSignal;
  /** Asks this call's question instead of the kernel's faces (InvokeOptions.prompter); never kept for another call. */
  prompter?: Prompter;
  /** Computed only if a person is actually going to be asked. */
  preview: () => Promise<Preview | null>;
  /**
   * Set for tools that accept edited arguments: validates an edit (throws a MemoError saying what is
   * wrong) and returns the revised call, which is put to the person again.
   */
  revise?: (args: Record<string, unknown>) => Promise<RevisedCall>;
}

/** How the question was settled; written to the audit line as `decision`. */
export type GateDecision =
  | 'auto'
  | 'allow:once'
  | 'allow:conversation'
  | 'allow:session'
  | 'allow:minutes'
  | 'allow:forever'
  | 'allow:stored-session'
  | 'allow:stored-conversation'
  | 'allow:stored-until'
  | 'allow:stored-forever'
  | 'allow:always-allow'
  | 'allow:pre-approved';

/** The gate's verdict: how the call was allowed, and the arguments it runs with when a person edited them. */
export interface GateOutcome {
  decision: GateDecision;
  /** The face (or host) whose answer allowed the call, when a person was asked. */
  answeredBy?: string;
  edited?: { args: Record<string, unknown>; maskedArgs: unknown; by: string };
}

export const DEFAULT_PROMPT_TIMEOUT_MS = 60_000;

const SESSION_DEFAULT = '(kernel)';
/** Callers the person's global "always allow" covers: the kernel's own agent turns and routines. */
const ALWAYS_ALLOW_CALLERS: ReadonlySet<Caller['kind']> = new Set(['agent', 'routine']);
/** The most edits one question takes before the call is refused (a loop between a face and a broken tool). */
const MAX_EDITS = 20;

/** Deletes, `confirm: always` tools, calls the tool itself has a concern about and external clients' writes are asked every time. */
function asksEveryTime(call: { effect: Effect; confirm?: 'always' | undefined; external?: string | undefined }, concern: Concern | null | undefined): boolean {
  return call.effect === 'delete' || call.confirm === 'always' || !!concern || call.external !== undefined;
}

/** The answers an external client's write offers: this call, or not. */
const EXTERNAL_ANSWERS = ['allow-once', 'deny-once'];

/**
 * Whether the gate lets a call through without looking anything up or asking anyone (decision
 * `auto`): a `safe` tool's call that is not asked every time, unless a stored deny refuses the tool
 * (`deniesOutright`, which the pipeline asks too). `check` answers these calls with `auto`; the
 * pipeline asks this first, so the everyday read builds no question it never asks.
 */
export function isAutomatic(call: { danger: Danger; effect: Effect; confirm?: 'always' | undefined }, concern: Concern | null | undefined): boolean {
  return call.danger === 'safe' && !asksEveryTime(call, concern);
}

/**
 * The permission gate. A stored deny refuses any tool, safe ones included. `safe` tools run; anything else is answered by a stored decision, by the
 * person's global "always allow" (agent turns and routines only), or by asking through the approval
 * broker. Deny wins over allow. Deletes, `confirm: always` tools and calls the tool itself has a
 * concern about (the judge's `ask` verdict) ask every time, whatever the danger: no standing
 * approval applies to them, though a stored deny still does, and where nobody can be asked they are
 * denied. Global "always allow" skips `confirm: always` but never a delete or a concern.
 * Pre-approvals (`preApprove`, a routine's tools for one run) are standing approvals like any other.
 */
@injectable()
export class PermissionGate {
  private readonly sessions = new Map<string, Set<string>>();
  /** Tools approved ahead of time for one session (a routine's run), by session id. */
  private readonly preApproved = new Map<string, ReadonlySet<string>>();

  constructor(
    @inject(PermissionStore) private readonly store: PermissionStore,
    @inject(ApprovalBroker) private readonly broker: ApprovalBroker,
    @inject(Clock) private readonly clock: Clock,
  ) {}

  /** Whether a stored deny refuses `tool` now: the pipeline asks before letting a safe call through by itself. */
  deniesOutright(tool: string): boolean {
    return this.store.denies(tool, this.clock.now());
  }

  /** Resolves with how the call was allowed, or throws PERMISSION_DENIED / PERMISSION_TIMEOUT / APPROVAL_EXPIRED / CANCELLED. */
  async check(call: GateCall): Promise<GateOutcome> {
    const now = this.clock.now();
    const conversationId = call.caller.conversationId;
    const stored = this.store.find(call.tool, now, conversationId);
    // A stored deny refuses even a safe tool: a person who denied it meant it.
    if (stored.deny) throw this.denied(call, 'deny:stored', `${call.tool} is denied (${describeScope(stored.deny)}; see \`memo permissions list\`).`);
    if (isAutomatic(call, call.concern)) return { decision: 'auto' };

    if (this.store.alwaysAllow && ALWAYS_ALLOW_CALLERS.has(call.caller.kind) && call.effect !== 'delete' && !call.concern && call.external === undefined)
      return { decision: 'allow:always-allow' };

    const sessionKey = call.caller.sessionId ?? SESSION_DEFAULT;
    if (!asksEveryTime(call, call.concern)) {
      // Only a routine's own calls: no other caller can name its way into a run's grant.
      if (call.caller.kind === 'routine' && call.caller.sessionId !== undefined && this.preApproved.get(call.caller.sessionId)?.has(call.tool))
        return { decision: 'allow:pre-approved' };
      if (this.sessions.get(sessionKey)?.has(call.tool)) return { decision: 'allow:stored-session' };
      const allow = stored.allow;
      if (allow?.scope === 'conversation') return { decision: 'allow:stored-conversation' };
      if (allow?.scope === 'until') return { decision: 'allow:stored-until' };
      if (allow?.scope === 'forever') return { decision: 'allow:stored-forever' };
    }

    // Ask, and ask again after each accepted edit: the person approves the call that will run.
    let current: { maskedArgs: unknown; concern: Concern | null; preview: () => Promise<Preview | null> } = {
      maskedArgs: call.maskedArgs,
      concern: call.concern ?? null,
      preview: call.preview,
    };
    let edited: GateOutcome['edited'];
    let editProblem: string | undefined;
    for (let revision = 1, asked = 0; ; asked++) {
      if (asked > MAX_EDITS) throw this.denied(call, 'deny:edits', `${call.tool} was refused after ${MAX_EDITS} edits without an answer.`);
      const askEveryTime = asksEveryTime(call, current.concern);
      const reply = await this.ask(call, current, askEveryTime, revision, edited?.by, editProblem);
      if (typeof reply.answer !== 'string') {
        // An edit: checked and previewed again, then put to the person as a new revision.
        if (!call.revise) {
          editProblem = `${call.tool} does not accept edited arguments`;
          continue;
        }
        try {
          const revised = await call.revise(reply.answer.edit);
          current = revised;
          edited = { args: revised.args, maskedArgs: revised.maskedArgs, by: reply.by };
          editProblem = undefined;
          revision++;
        } catch (err) {
          editProblem = (err as Error)?.message ?? String(err);
        }
        continue;
      }
      let decision: GateDecision;
      try {
        decision = this.apply(call, reply.answer, askEveryTime, sessionKey);
      } catch (err) {
        // A denial says who gave it, for the audit line.
        if (isMemoError(err) && err.details) err.details.answeredBy = reply.by;
        throw err;
      }
      return edited ? { decision, answeredBy: reply.by, edited } : { decision, answeredBy: reply.by };
    }
  }

  /** Records what a person answered, and says how the call was allowed (or throws the denial). */
  private apply(call: GateCall, answer: PermissionAnswer, askEveryTime: boolean, sessionKey: string): GateDecision {
    const at = new Date(this.clock.now());
    const minutes = answerMinutes(answer);
    if (answer.startsWith('allow-') && answer !== 'allow-once' && askEveryTime) return 'allow:once';
    // An external client's write offers this call only, both ways: a face that answers for ever still answers this call.
    if (call.external !== undefined && answer === 'deny-forever') throw this.denied(call, 'deny:once', `The user denied this ${call.tool} call.`);
    if (minutes !== null) {
      this.store.set(
        { tool: call.tool, decision: 'allow', plugin: call.plugin, scope: 'until', expiresAt: new Date(at.getTime() + minutes * 60_000).toISOString() },
        at,
      );
      return 'allow:minutes';
    }
    switch (answer) {
      case 'allow-once':
        return 'allow:once';
      case 'allow-conversation':
        // Only a call of a conversation can be allowed for it; without one it is this call alone.
        if (!call.caller.conversationId) return 'allow:once';
        this.store.set({ tool: call.tool, decision: 'allow', plugin: call.plugin, scope: 'conversation', conversationId: call.caller.conversationId }, at);
        return 'allow:conversation';
      case 'allow-session':
        this.sessionSet(sessionKey).add(call.tool);
        return 'allow:session';
      case 'allow-forever':
        this.store.set({ tool: call.tool, decision: 'allow', plugin: call.plugin, scope: 'forever' }, at);
        return 'allow:forever';
      case 'deny-forever':
        this.store.set({ tool: call.tool, decision: 'deny', plugin: call.plugin, scope: 'forever' }, at);
        throw this.denied(call, 'deny:forever', `The user denied ${call.tool}, permanently.`);
      case 'deny-once':
      default:
        throw this.denied(call, 'deny:once', `The user denied this ${call.tool} call.`);
    }
  }

  /**
   * Approves `tools` ahead of time for the calls of one session (a routine's run, whose tools the
   * person approved with the routine), until disposed. It is a standing approval like any other:
   * a stored deny still wins, and deletes, `confirm: always` tools and calls with a concern are
   * still asked every time. One grant per session; a second is refused.
   */
  preApprove(sessionId: string, tools: Iterable<string>): Disposable {
    if (!sessionId || sessionId === SESSION_DEFAULT) throw new MemoError('VALIDATION', 'Pre-approvals need a session of their own.');
    if (this.preApproved.has(sessionId)) throw new MemoError('CONFLICT', `The session ${sessionId} already has pre-approved tools.`);
    const set: ReadonlySet<string> = new Set(tools);
    this.preApproved.set(sessionId, set);
    return toDisposable(() => {
      if (this.preApproved.get(sessionId) === set) this.preApproved.delete(sessionId);
      // What a person allowed "for the session" during the run ends with it too.
      this.sessions.delete(sessionId);
    });
  }

  /** Whether a person lets an external MCP client declaring `client` ask for writes (`memo permissions external-writes`). */
  externalWritesFor(client: string | undefined): boolean {
    return this.store.externalWritesFor(client);
  }

  /** Forgets session approvals (all sessions, or one). */
  clearSession(sessionId?: string): void {
    if (sessionId === undefined) this.sessions.clear();
    else this.sessions.delete(sessionId);
  }

  private sessionSet(key: string): Set<string> {
    let set = this.sessions.get(key);
    if (!set) this.sessions.set(key, (set = new Set()));
    return set;
  }

  /** The error a call is refused with when its preview threw: the tool's own (code and words), else TOOL_FAILED as a failed run is. */
  private previewFailed(call: GateCall, err: unknown): MemoError {
    const details = { decision: 'deny:preview-failed' };
    if (isMemoError(err)) return new MemoError(err.code, err.message, { tool: call.tool, plugin: call.plugin, details: { ...err.details, ...details } });
    // Worded as a failure of the call's own code is (tool-pipeline.ts): one shape for the caller, whatever step failed.
    return new MemoError('TOOL_FAILED', `${call.tool} failed: ${(err as Error)?.message ?? String(err)}`, { tool: call.tool, plugin: call.plugin, details });
  }

  private denied(call: GateCall, decision: string, message: string): MemoError {
    return new MemoError('PERMISSION_DENIED', message, { tool: call.tool, plugin: call.plugin, details: { decision } });
  }

  private async ask(
    call: GateCall,
    current: { maskedArgs: unknown; concern: Concern | null; preview: () => Promise<Preview | null> },
    askEveryTime: boolean,
    revision: number,
    editedBy: string | undefined,
    editProblem: string | undefined,
  ): Promise<{ answer: PermissionAnswer | { edit: Record<string, unknown> }; by: string }> {
    if (call.signal.aborted) throw this.cancelled(call);
    let preview: Preview | null;
    try {
      preview = await current.preview();
    } catch (err) {
      // A preview that cannot be made is a call that would fail (a path outside the root, a note that
      // is not there): refused with its own error, before anyone is asked to approve what cannot run.
      throw this.previewFailed(call, err);
    }
    const answers =
      call.external !== undefined
        ? EXTERNAL_ANSWERS
        : askEveryTime
          ? ['allow-once', 'deny-once', 'deny-forever']
          : [
              'allow-once',
              ...(call.caller.conversationId ? ['allow-conversation'] : []),
              'allow-session',
              'allow-minutes:N',
              'allow-forever',
              'deny-once',
              'deny-forever',
            ];
    const only: ApprovalFace | undefined = call.prompter ? { name: 'cli', ask: (r, s) => call.prompter!.ask(r, s) } : undefined;
    const outcome = await this.broker.request(
      {
        callId: call.callId,
        tool: call.tool,
        plugin: call.plugin,
        danger: call.danger,
        effect: call.effect,
        args: current.maskedArgs,
        preview,
        ...(current.concern ? { concern: current.concern } : {}),
        ...(call.external !== undefined ? { external: call.external } : {}),
        caller: call.caller,
        standingApprovalAllowed: !askEveryTime,
        answers,
        editable: !!call.revise,
        revision,
        ...(editedBy ? { editedBy } : {}),
        ...(editProblem ? { editProblem } : {}),
      },
      call.signal,
      only,
    );
    switch (outcome.kind) {
      case 'reply':
        return { answer: outcome.reply, by: outcome.by };
      case 'cancelled':
        // Stopping a run while its prompt waits counts as a denial.
        throw this.cancelled(call);
      case 'timeout':
        throw new MemoError(
          'PERMISSION_TIMEOUT',
          outcome.unrecorded
            ? `${call.tool} was denied: the answer given here (${outcome.unrecorded.answer} by ${outcome.unrecorded.by}) could not be recorded because the shared approvals database could not be reached, and nobody answered through it within ${Math.round(outcome.waitedMs / 1000)} s.`
            : `Nobody answered the permission prompt for ${call.tool} within ${Math.round(outcome.waitedMs / 1000)} s, so it was denied.`,
          { tool: call.tool, plugin: call.plugin, details: { decision: 'deny:timeout' } },
        );
      case 'expired':
        throw new MemoError(
          'APPROVAL_EXPIRED',
          outcome.unrecorded
            ? `The approval request for ${call.tool} expired after ${Math.round(outcome.waitedMs / 60_000)} minutes; it did not run: the answer given here (${outcome.unrecorded.answer} by ${outcome.unrecorded.by}) could not be recorded because the shared approvals database could not be reached, and nobody answered through it. Ask again if it is still wanted.`
            : `The approval request for ${call.tool} expired after ${Math.round(outcome.waitedMs / 60_000)} minutes without an answer; it did not run. Ask again if it is still wanted.`,
          { tool: call.tool, plugin: call.plugin, details: { decision: 'expired' } },
        );
      case 'unattended':
        if (call.caller.kind === 'routine')
          throw this.denied(
            call,
            'deny:unattended',
            `${call.tool} needs a person's approval, which the routine's approval did not cover, and nobody was watching approvals when it ran, so it was refused.`,
          );
        throw this.denied(
          call,
          'deny:unattended',
          `${call.tool} needs a person's approval, and nobody is watching this server's approvals, so it was refused at once. To be asked, keep \`memo approvals list --watch\` running in another terminal (answer with \`memo approvals answer <id> allow-once\`), then call it again.${askEveryTime ? '' : ` Or allow it ahead of time: \`memo permissions allow ${call.tool}\`.`}`,
        );
      case 'unanswered':
      default:
        throw this.denied(call, 'deny:unanswered', `${call.tool} was denied: ${outcome.kind === 'unanswered' ? outcome.reason : 'nobody answered'}.`);
    }
  }

  private cancelled(call: GateCall): MemoError {
    return new MemoError('CANCELLED', `The call to ${call.tool} was cancelled while waiting for permission; it did not run.`, {
      tool: call.tool,
      plugin: call.plugin,
      details: { decision: 'deny:cancelled' },
    });
  }
}

function describeScope(d: { scope: string; expiresAt?: string; conversationId?: string }): string {
  return d.scope === 'until' ? `until ${d.expiresAt}` : d.scope === 'conversation' ? `in conversation ${d.conversationId}` : 'permanently';
}
