import type { Clock } from '../clock.js';
import { inject, injectable } from '../di.js';
import * as T from '../tokens.js';
import { withDeadline } from '../util/with-deadline.js';
import { MemoError } from '../errors.js';
import type { Caller, Concern, Danger, Effect, Preview } from '../tools/contract.js';
import { PermissionStore } from './permission-store.js';
import type { PermissionAnswer, Prompter } from './prompter.js';

export interface GateCall {
  callId: string;
  tool: string;
  plugin: string;
  danger: Danger;
  effect: Effect;
  confirm?: 'always';
  /** The tool's own judgement of this call (e.g. the command judge's `ask`): asked every time. */
  concern?: Concern | null;
  maskedArgs: unknown;
  caller: Caller;
  signal: AbortSignal;
  /** Asks this call's question instead of the gate's prompter (InvokeOptions.prompter); never kept for another call. */
  prompter?: Prompter;
  /** Computed only if a person is actually going to be asked. */
  preview: () => Promise<Preview | null>;
}

/** How the question was settled; written to the audit line as `decision`. */
export type GateDecision = 'auto' | 'allow:once' | 'allow:session' | 'allow:forever' | 'allow:stored-session' | 'allow:stored-forever';

export const DEFAULT_PROMPT_TIMEOUT_MS = 60_000;

const SESSION_DEFAULT = '(kernel)';

/**
 * The permission gate. `safe` tools run; anything else is answered by a stored decision or by
 * asking the host's Prompter. Deny wins over allow. Deletes, `confirm: always` tools and calls the
 * tool itself has a concern about (the judge's `ask` verdict) ask every time, whatever the danger:
 * no standing approval applies to them, though a stored deny still does, and where nobody can be
 * asked they are denied.
 */
@injectable()
export class PermissionGate {
  private readonly sessions = new Map<string, Set<string>>();

  constructor(
    @inject(PermissionStore) private readonly store: PermissionStore,
    @inject(T.Prompter) private readonly prompter: Prompter,
    @inject(T.Clock) private readonly clock: Clock,
    @inject(T.PromptTimeoutMs) private readonly timeoutMs = DEFAULT_PROMPT_TIMEOUT_MS,
  ) {}

  /** Resolves with how the call was allowed, or throws PERMISSION_DENIED / PERMISSION_TIMEOUT / CANCELLED. */
  async check(call: GateCall): Promise<GateDecision> {
    const askEveryTime = call.effect === 'delete' || call.confirm === 'always' || !!call.concern;
    if (call.danger === 'safe' && !askEveryTime) return 'auto';

    const stored = this.store.get(call.tool);
    if (stored?.decision === 'deny') throw this.denied(call, 'deny:stored', `${call.tool} is denied permanently (see \`memo permissions list\`).`);

    const sessionKey = call.caller.sessionId ?? SESSION_DEFAULT;
    if (!askEveryTime) {
      if (this.sessions.get(sessionKey)?.has(call.tool)) return 'allow:stored-session';
      if (stored?.decision === 'allow') return 'allow:stored-forever';
    }

    const answer = await this.ask(call, askEveryTime);
    switch (answer) {
      case 'allow-once':
        return 'allow:once';
      case 'allow-session':
        if (askEveryTime) return 'allow:once';
        this.sessionSet(sessionKey).add(call.tool);
        return 'allow:session';
      case 'allow-forever':
        if (askEveryTime) return 'allow:once';
        this.store.set(call.tool, 'allow', call.plugin, new Date(this.clock.now()));
        return 'allow:forever';
      case 'deny-forever':
        this.store.set(call.tool, 'deny', call.plugin, new Date(this.clock.now()));
        throw this.denied(call, 'deny:forever', `The user denied ${call.tool}, permanently.`);
      case 'deny-once':
      default:
        throw this.denied(call, 'deny:once', `The user denied this ${call.tool} call.`);
    }
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

  private denied(call: GateCall, decision: string, message: string): MemoError {
    return new MemoError('PERMISSION_DENIED', message, { tool: call.tool, plugin: call.plugin, details: { decision } });
  }

  private async ask(call: GateCall, askEveryTime: boolean): Promise<PermissionAnswer> {
    if (call.signal.aborted) throw this.cancelled(call);
    let preview: Preview | null;
    try {
      preview = await call.preview();
    } catch (err) {
      preview = { kind: 'text', text: `(no preview: ${(err as Error).message})` };
    }
    const deadline = this.clock.now() + this.timeoutMs;
    // The prompter's signal: the run stopping, or nobody answering in time. Aborted too once an
    // answer arrives, so other prompters showing the same question withdraw it.
    const waiting = withDeadline(call.signal, this.timeoutMs, this.clock);
    return new Promise<PermissionAnswer>((resolve, reject) => {
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        waiting.signal.removeEventListener('abort', onStop);
        waiting.abort();
        fn();
      };
      const onStop = () => {
        // Stopping a run while its prompt waits counts as a denial.
        if (waiting.cause !== 'timeout') return finish(() => reject(this.cancelled(call)));
        finish(() =>
          reject(
            new MemoError(
              'PERMISSION_TIMEOUT',
              `Nobody answered the permission prompt for ${call.tool} within ${Math.round(this.timeoutMs / 1000)} s, so it was denied.`,
              { tool: call.tool, plugin: call.plugin, details: { decision: 'deny:timeout' } },
            ),
          ),
        );
      };
      // The run may have stopped while the preview was being made.
      if (waiting.signal.aborted) return onStop();
      waiting.signal.addEventListener('abort', onStop, { once: true });
      (call.prompter ?? this.prompter)
        .ask(
          {
            callId: call.callId,
            tool: call.tool,
            plugin: call.plugin,
            danger: call.danger,
            effect: call.effect,
            args: call.maskedArgs,
            preview,
            ...(call.concern ? { concern: call.concern } : {}),
            caller: call.caller,
            standingApprovalAllowed: !askEveryTime,
            deadline,
          },
          waiting.signal,
        )
        .then(
          (answer) => finish(() => resolve(answer)),
          (err: unknown) => finish(() => reject(this.denied(call, 'deny:unanswered', `${call.tool} was denied: ${(err as Error)?.message ?? String(err)}.`))),
        );
    });
  }

  private cancelled(call: GateCall): MemoError {
    return new MemoError('CANCELLED', `The call to ${call.tool} was cancelled while waiting for permission; it did not run.`, {
      tool: call.tool,
      plugin: call.plugin,
      details: { decision: 'deny:cancelled' },
    });
  }
}
