import * as readline from 'node:readline';
import type { Clock } from '../clock.js';
import type { PermissionAnswer, PermissionRequest, Prompter } from '../permissions/prompter.js';

const CHOICES: Array<{ key: string; answer: PermissionAnswer; label: string; standing: boolean }> = [
  { key: 'y', answer: 'allow-once', label: 'allow once', standing: false },
  { key: 's', answer: 'allow-session', label: 'allow for this session', standing: true },
  { key: 'a', answer: 'allow-forever', label: 'always allow', standing: true },
  { key: 'n', answer: 'deny-once', label: 'deny', standing: false },
  { key: 'N', answer: 'deny-forever', label: 'always deny', standing: false },
];

/**
 * Asks on the terminal: tool, danger, masked arguments, the preview, and a countdown. Anything
 * but a listed key asks again; end of input, the countdown or a withdrawn prompt is a denial.
 */
export class TtyPrompter implements Prompter {
  constructor(
    private readonly clock: Clock,
    private readonly input: NodeJS.ReadableStream = process.stdin,
    private readonly output: NodeJS.WritableStream = process.stderr,
  ) {}

  ask(req: PermissionRequest, signal: AbortSignal): Promise<PermissionAnswer> {
    const choices = CHOICES.filter((c) => req.standingApprovalAllowed || !c.standing);
    const out = this.output;
    out.write(`\n┌─ Permission needed ─ ${req.tool} (${req.plugin}) ─ ${req.danger}, ${req.effect}\n`);
    out.write(`│ arguments: ${JSON.stringify(req.args)}\n`);
    if (req.preview) for (const line of req.preview.text.split('\n').slice(0, 40)) out.write(`│ ${line}\n`);
    if (req.concern) {
      // The judge's reasons already start with their rule id; name it only when a reason does not.
      const { rule, reason } = req.concern;
      out.write(`│ ⚠ ${reason.startsWith(`${rule}:`) ? reason : `${reason} (${rule})`}\n`);
    }
    if (!req.standingApprovalAllowed)
      out.write(`│ (${req.concern ? 'such calls' : req.effect === 'delete' ? 'deletes' : 'this tool'} always ask: no standing approval)\n`);
    out.write(`└ ${choices.map((c) => `[${c.key}] ${c.label}`).join('  ')}\n`);

    return new Promise<PermissionAnswer>((resolve) => {
      const rl = readline.createInterface({ input: this.input, output: this.output, terminal: false });
      let done = false;
      const finish = (answer: PermissionAnswer) => {
        if (done) return;
        done = true;
        clearInterval(tick);
        rl.close();
        resolve(answer);
      };
      const remaining = () => Math.max(0, Math.ceil((req.deadline - this.clock.now()) / 1000));
      const prompt = () => out.write(`answer (${remaining()} s left): `);
      const tick = setInterval(() => {
        if (remaining() <= 0) return finish('deny-once');
        if (remaining() % 10 === 0) {
          out.write(`\n`);
          prompt();
        }
      }, 1000);
      tick.unref();
      prompt();
      rl.on('line', (line) => {
        const key = line.trim();
        const choice = choices.find((c) => c.key === key) ?? choices.find((c) => c.key === key.toLowerCase() && key !== 'N');
        if (choice) finish(choice.answer);
        else prompt();
      });
      rl.on('close', () => finish('deny-once'));
      signal.addEventListener('abort', () => {
        out.write('\n(prompt withdrawn: denied)\n');
        finish('deny-once');
      });
    });
  }
}
