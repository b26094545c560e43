import * as readline from 'node:readline';
import type { Clock } from '../clock.js';
import { approvalDisplay, displayLines, visibleLine } from '../control/preview-format.js';
import { MAX_ALLOW_MINUTES, type ApprovalFace, type ApprovalReply, type PermissionAnswer, type PermissionRequest } from '../permissions/prompter.js';

/** What one key offers. `answer` is the request's answer it stands for (`allow-minutes` for the timed one, whose N is asked next). */
interface Choice {
  key: string;
  answer: string;
  label: string;
  /** Outlives this call: never offered when the request allows no standing approval. */
  standing: boolean;
}

const CHOICES: Choice[] = [
  { key: 'y', answer: 'allow-once', label: 'allow once', standing: false },
  { key: 'c', answer: 'allow-conversation', label: 'allow for this conversation', standing: true },
  { key: 's', answer: 'allow-session', label: 'allow for this session', standing: true },
  { key: 'm', answer: 'allow-minutes', label: 'allow for N minutes', standing: true },
  { key: 'a', answer: 'allow-forever', label: 'always allow', standing: true },
  { key: 'n', answer: 'deny-once', label: 'deny', standing: false },
  { key: 'N', answer: 'deny-forever', label: 'always deny', standing: false },
];
const EDIT: Choice = { key: 'e', answer: 'edit', label: 'edit the arguments', standing: false };

const PREVIEW_LINES = 40;
/** How long past its deadline the face waits for the asker's withdrawal before it gives up by itself. */
const GIVE_UP_AFTER_MS = 5_000;

/** The request offers this choice: `answers` lists it (the timed one as `allow-minutes` or `allow-minutes:N`). */
function offered(req: PermissionRequest, c: Choice): boolean {
  if (c.standing && !req.standingApprovalAllowed) return false;
  return req.answers.some((a) => a === c.answer || (c.answer === 'allow-minutes' && a.startsWith('allow-minutes')));
}

/** The one line said when a question is taken back before this face answered, from the signal's reason (an ApprovalWithdrawn). */
function withdrawnLine(reason: unknown): string {
  const { why, by } = (typeof reason === 'object' && reason !== null ? reason : {}) as { why?: unknown; by?: unknown };
  switch (why) {
    case 'answered':
      return typeof by === 'string' && by ? `(answered elsewhere by ${by})` : '(answered elsewhere)';
    case 'timeout':
      return '(no answer in time: denied)';
    case 'expired':
      return '(request expired)';
    case 'cancelled':
      return '(call cancelled: denied)';
    default:
      return '(withdrawn)';
  }
}

function choicesLine(choices: Choice[]): string {
  return `└ ${choices.map((c) => `[${c.key}] ${c.label}`).join('  ')}`;
}

/** Parses an edited argument line: the object, or why it is not one. */
function parseEdit(line: string): { args: Record<string, unknown> } | { problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return { problem: `not valid JSON (${(err as Error).message})` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { problem: `the arguments must be a JSON object, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}` };
  return { args: value as Record<string, unknown> };
}

/**
 * Asks on the terminal: tool, danger, the request as preview-format.ts lays it out (facts, body,
 * quoted text), the masked arguments, and a countdown. Anything but an offered key asks again. `m`
 * asks for how many minutes, `e` (for editable tools) reads the new arguments as one line of JSON.
 * End of input is no answer: the reply is refused (rejected), so another face may still answer; with
 * none, the call is denied.
 *
 * The question's signal aborts when it is withdrawn (answered by another face, timed out, expired,
 * cancelled), and also once any answer arrives, this face's own included: so the abort listener
 * lives exactly as long as the question, and only a withdrawal that comes first is reported.
 */
export class TtyPrompter implements ApprovalFace {
  readonly name = 'terminal';

  constructor(
    private readonly clock: Clock,
    private readonly input: NodeJS.ReadableStream = process.stdin,
    private readonly output: NodeJS.WritableStream = process.stderr,
  ) {}

  ask(req: PermissionRequest, signal: AbortSignal): Promise<ApprovalReply> {
    const choices = [...CHOICES.filter((c) => offered(req, c)), ...(req.editable ? [EDIT] : [])];
    const out = this.output;
    this.showBox(req, choices);

    return new Promise<ApprovalReply>((resolve, reject) => {
      const rl = readline.createInterface({ input: this.input, terminal: false });
      // What the next line answers: the choice, the minutes of `m`, or the arguments of `e`.
      let mode: 'choice' | 'minutes' | 'edit' = 'choice';
      let done = false;
      const finish = (settle: () => void, line?: string) => {
        if (done) return;
        done = true;
        this.clock.clearTimeout(tick);
        signal.removeEventListener('abort', onAbort);
        if (line) out.write(`\n${line}\n`);
        rl.close();
        settle();
      };
      const answer = (reply: ApprovalReply) => finish(() => resolve(reply));
      // A withdrawn question has no answer from this face: whoever asked has stopped listening, so the reply is only a formality.
      const onAbort = () => finish(() => resolve('deny-once'), withdrawnLine(signal.reason));

      const remaining = () => Math.max(0, Math.ceil((req.deadline - this.clock.now()) / 1000));
      const prompt = () => {
        if (mode === 'choice') out.write(`answer (${remaining()} s left): `);
        else if (mode === 'minutes') out.write(`for how many minutes? (1-${MAX_ALLOW_MINUTES}, ${remaining()} s left) `);
        else out.write(`new arguments (one line of JSON; empty line to go back; ${remaining()} s left): `);
      };
      // Once a second on the kernel's clock (a test's clock moves only when told to); SystemClock's timers do not keep the process alive.
      const second = () => {
        // At the deadline the asker withdraws the question (a timeout, which stops an agent run: not
        // the same as a denial), and this face says so then. It gives up on its own only when no
        // withdrawal comes, and then as a face that could not answer, not as a person who denied.
        if (this.clock.now() >= req.deadline + GIVE_UP_AFTER_MS)
          return finish(() => reject(new Error('nobody answered on the terminal in time')), '(no answer in time: denied)');
        tick = this.clock.setTimeout(second, 1000);
        // Someone typing a line of JSON is not interrupted by the countdown.
        const left = remaining();
        if (left > 0 && left % 10 === 0 && mode !== 'edit') {
          out.write(`\n`);
          prompt();
        }
      };
      let tick = this.clock.setTimeout(second, 1000);

      const backToChoice = () => {
        mode = 'choice';
        out.write(`${choicesLine(choices)}\n`);
        prompt();
      };
      const onLine = (raw: string) => {
        const line = raw.trim();
        // An empty line in a sub-question goes back to the choice (a key pressed by mistake).
        if (line === '' && mode !== 'choice') return backToChoice();
        if (mode === 'minutes') {
          if (/^\d+$/.test(line) && Number(line) >= 1 && Number(line) <= MAX_ALLOW_MINUTES) return answer(`allow-minutes:${Number(line)}` as PermissionAnswer);
          out.write(`a whole number of minutes from 1 to ${MAX_ALLOW_MINUTES}, please\n`);
          return prompt();
        }
        if (mode === 'edit') {
          const parsed = parseEdit(line);
          if ('args' in parsed) return answer({ edit: parsed.args });
          out.write(`${parsed.problem}\n`);
          return prompt();
        }
        // Upper case works too, except N: it is its own key (always deny).
        const choice = choices.find((c) => c.key === line) ?? choices.find((c) => c.key === line.toLowerCase() && line !== 'N');
        if (!choice) return prompt();
        if (choice.key === 'm') mode = 'minutes';
        else if (choice === EDIT) {
          mode = 'edit';
          out.write(`current arguments: ${visibleLine(JSON.stringify(req.args) ?? '{}')}\n`);
        } else return answer(choice.answer as PermissionAnswer);
        prompt();
      };
      rl.on('line', onLine);
      // End of input (Ctrl-D, a closed stdin) is not an answer: this face cannot answer, others still may.
      rl.on('close', () => finish(() => reject(new Error("the terminal's input ended before an answer"))));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      prompt();
    });
  }

  private showBox(req: PermissionRequest, choices: Choice[]): void {
    const out = this.output;
    out.write(`\n┌─ Permission needed ─ ${visibleLine(`${req.tool} (${req.plugin})`)} ─ ${req.danger}, ${req.effect}\n`);
    // The kernel's and the tool's facts first, never cut; the body; the caller's own text last, quoted.
    for (const line of displayLines(approvalDisplay(req), { bodyLines: PREVIEW_LINES })) out.write(`│ ${line}\n`);
    out.write(`│ arguments: ${visibleLine(JSON.stringify(req.args) ?? 'none')}\n`);
    if (!req.standingApprovalAllowed)
      out.write(`│ (${req.concern ? 'such calls' : req.effect === 'delete' ? 'deletes' : 'this tool'} always ask: no standing approval)\n`);
    out.write(`${choicesLine(choices)}\n`);
  }
}
