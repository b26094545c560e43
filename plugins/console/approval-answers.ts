import { approvalView, isPermissionAnswer, type AnswerResult, type ApprovalReply, type ApprovalView, type PendingApproval } from 'memo-kernel/pack';

/** A request as the console lists it: with a shared database, also the instance it waits on, and whether that instance is gone. */
export type ConsoleApprovalView = ApprovalView & { instance?: string; gone?: boolean };

export function consoleView(p: PendingApproval): ConsoleApprovalView {
  return { ...approvalView(p), ...(p.instance !== undefined ? { instance: p.instance } : {}), ...(p.gone ? { gone: true, answerable: false } : {}) };
}

/** The HTTP status of an answer that did not count. */
export function refusalStatus(code: Exclude<AnswerResult, { ok: true }>['code']): number {
  switch (code) {
    case 'NOT_PENDING':
      return 404;
    case 'GONE':
      return 410;
    case 'UNAVAILABLE':
      return 503;
    default:
      // ALREADY_ANSWERED, NOT_ANSWERABLE: the request is (or was) there, and this answer conflicts with its state.
      return 409;
  }
}

export interface Refusal {
  code: string;
  message: string;
}

/**
 * The reply a console answer stands for, or why it cannot be given: one of the answers the request
 * offers (`allow-minutes:N` stands for any N), or edited arguments for a tool that takes edits. An
 * answer the request does not offer is refused, never read as a narrower one (the same rule as
 * `memo approvals answer`).
 */
export function consoleReply(body: unknown, view: ApprovalView): { reply: ApprovalReply } | Refusal {
  const b = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  if (b.edit !== undefined) {
    if (b.answer !== undefined) return { code: 'BAD_REQUEST', message: 'Send "answer" or "edit", not both.' };
    if (typeof b.edit !== 'object' || b.edit === null || Array.isArray(b.edit))
      return { code: 'BAD_REQUEST', message: '"edit" must be a JSON object: the arguments as edited.' };
    if (!view.editable)
      return { code: 'NOT_EDITABLE', message: `${view.tool} does not accept edited arguments; answer with one of ${view.answers.join(', ')}.` };
    return { reply: { edit: b.edit as Record<string, unknown> } };
  }
  if (!isPermissionAnswer(b.answer)) return { code: 'BAD_REQUEST', message: 'Send "answer" (allow-once, deny-once, allow-minutes:N, ...) or "edit".' };
  const answer = b.answer;
  const offered = view.answers.some((a) => a === answer || (a === 'allow-minutes:N' && answer.startsWith('allow-minutes:')));
  if (!offered) return { code: 'ANSWER_NOT_OFFERED', message: `${answer} does not apply to this ${view.tool} request; it takes ${view.answers.join(', ')}.` };
  return { reply: answer };
}
