import type { Caller, Concern, Danger, Effect, Preview } from '../tools/contract.js';

/** The five answers of the seed's policy table (no answer at all is the sixth: a timeout). */
export const PermissionAnswers = ['allow-once', 'allow-session', 'allow-forever', 'deny-once', 'deny-forever'] as const;
export type PermissionAnswer = (typeof PermissionAnswers)[number];

export function isPermissionAnswer(v: unknown): v is PermissionAnswer {
  return typeof v === 'string' && (PermissionAnswers as readonly string[]).includes(v);
}

/** What a person is asked. Arguments are already masked. */
export interface PermissionRequest {
  callId: string;
  tool: string;
  plugin: string;
  danger: Danger;
  effect: Effect;
  args: unknown;
  preview: Preview | null;
  /** Why this call is asked whatever the stored decisions (e.g. inline interpreter code in a command). */
  concern?: Concern;
  caller: Caller;
  /** False for deletes, `confirm: always` tools and calls with a concern: only a one-time allow applies, so don't offer the others. */
  standingApprovalAllowed: boolean;
  /** When the question expires (epoch ms, by the kernel's clock). */
  deadline: number;
}

/** Host apps supply one; the CLI asks on the TTY. The signal aborts when the call is cancelled or times out. */
export interface Prompter {
  ask(request: PermissionRequest, signal: AbortSignal): Promise<PermissionAnswer>;
}

/** Denies everything: the prompter when nobody can be asked (no TTY, no host). The reason reaches the caller. */
export class DenyingPrompter implements Prompter {
  constructor(readonly reason = 'nobody is there to answer permission prompts (no terminal); answer in advance with --approve') {}
  ask(): Promise<PermissionAnswer> {
    return Promise.reject(new Error(this.reason));
  }
}

/** Answers every question the same way: for scripted use (`--approve allow-once`). */
export class FixedAnswerPrompter implements Prompter {
  constructor(readonly answer: PermissionAnswer) {}
  ask(): Promise<PermissionAnswer> {
    return Promise.resolve(this.answer);
  }
}
