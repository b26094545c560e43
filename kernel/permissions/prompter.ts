import type { Caller, Concern, Danger, Effect, Preview } from '../tools/contract.js';

/** The DI token of the kernel's own face (null: none; requests wait in the approval broker). */
export const Prompter = Symbol('Prompter');

/**
 * The answers a person can give, by lifetime: this call, this conversation, this kernel session,
 * N minutes (`allow-minutes:30`), forever; deny this call, deny forever. No answer at all is a
 * timeout (the face's wait ran out) or an expiry (the request waited in the broker for 30 minutes).
 */
export const PermissionAnswers = ['allow-once', 'allow-conversation', 'allow-session', 'allow-forever', 'deny-once', 'deny-forever'] as const;
export type PermissionAnswer = (typeof PermissionAnswers)[number] | `allow-minutes:${number}`;

/** The longest timed approval: a year, in minutes. */
export const MAX_ALLOW_MINUTES = 525_600;

const MINUTES = /^allow-minutes:([1-9]\d{0,5})$/;

export function isPermissionAnswer(v: unknown): v is PermissionAnswer {
  if (typeof v !== 'string') return false;
  if ((PermissionAnswers as readonly string[]).includes(v)) return true;
  const m = MINUTES.exec(v);
  return !!m && Number(m[1]) <= MAX_ALLOW_MINUTES;
}

/** The minutes of an `allow-minutes:N` answer, or null for any other answer. */
export function answerMinutes(answer: PermissionAnswer): number | null {
  const m = MINUTES.exec(answer);
  return m ? Number(m[1]) : null;
}

/** How `--approve` and the docs describe the accepted answers. */
export const ANSWER_HELP = `${PermissionAnswers.join(', ')}, allow-minutes:N`;

/**
 * A face's reply: an answer, or (for tools that accept edits) the arguments the person edited.
 * An edit is not an approval: the kernel validates the edited call, previews it again and asks
 * again; only then can it be allowed (once) and run.
 */
export type ApprovalReply = PermissionAnswer | { edit: Record<string, unknown> };

/** What a person is asked. Arguments are already masked. */
export interface PermissionRequest {
  /** The request's id in the approval broker (the call's id): what `kernel.approvals.answer(id, ...)` takes. */
  callId: string;
  tool: string;
  plugin: string;
  danger: Danger;
  effect: Effect;
  args: unknown;
  preview: Preview | null;
  /** Why this call is asked whatever the stored decisions (e.g. inline interpreter code in a command). */
  concern?: Concern;
  /**
   * Set for an external MCP client's write (`memo permissions external-writes`): the name the client
   * declares for itself, self-chosen and not verified. Only allow-once and deny-once are offered.
   */
  external?: string;
  caller: Caller;
  /** False for deletes, `confirm: always` tools and calls with a concern: only a one-time allow applies, so don't offer the others. */
  standingApprovalAllowed: boolean;
  /** The answers that mean something for this call (e.g. `allow-conversation` only for a call of a conversation). */
  answers: readonly string[];
  /** The tool accepts edited arguments (`{ edit: args }` as the reply). */
  editable: boolean;
  /** 1 for the call as the agent made it; 2, 3... after each accepted edit. */
  revision: number;
  /** Who edited the arguments shown (a face's name), from revision 2 on. */
  editedBy?: string;
  /** Why the last edit was refused (it broke the tool's schema); the arguments shown are the ones before it. */
  editProblem?: string;
  /** When the question expires (epoch ms, by the kernel's clock). */
  deadline: number;
}

/**
 * Asks a person. Host apps supply one; the CLI asks on the TTY. The signal aborts when the call is
 * cancelled or times out, or when another face answered first (its reason says which).
 */
export interface Prompter {
  ask(request: PermissionRequest, signal: AbortSignal): Promise<ApprovalReply>;
}

/** A face of the approval broker: a prompter with a name (recorded as who answered or edited). */
export interface ApprovalFace extends Prompter {
  readonly name: string;
  /** How long a request may wait for this face (default: the kernel's prompt timeout, 60 s). */
  readonly waitMs?: number;
}

/** Denies everything: the prompter when nobody can be asked (no TTY, no host). The reason reaches the caller. */
export class DenyingPrompter implements Prompter {
  constructor(readonly reason = 'nobody is there to answer permission prompts (no terminal); answer in advance with --approve') {}
  ask(): Promise<ApprovalReply> {
    return Promise.reject(new Error(this.reason));
  }
}

/** Answers every question the same way: for scripted use (`--approve allow-once`). */
export class FixedAnswerPrompter implements Prompter {
  constructor(readonly answer: PermissionAnswer) {}
  ask(): Promise<ApprovalReply> {
    return Promise.resolve(this.answer);
  }
}

/** Why a face's question was taken back: the `reason` of the signal a face's `ask` gets, once aborted. */
export class ApprovalWithdrawn extends Error {
  constructor(
    /** `answered`: another face answered first (`by`); `timeout`/`expired`: nobody answered in time; `cancelled`: the call stopped; `detached`: the face left. */
    readonly why: 'answered' | 'timeout' | 'expired' | 'cancelled' | 'detached',
    readonly by?: string,
  ) {
    super(
      why === 'answered'
        ? `answered by ${by ?? 'another face'}`
        : why === 'timeout'
          ? 'nobody answered in time'
          : why === 'expired'
            ? 'the request expired'
            : why === 'cancelled'
              ? 'the call was cancelled'
              : 'this face was detached',
    );
    this.name = 'ApprovalWithdrawn';
  }
}
