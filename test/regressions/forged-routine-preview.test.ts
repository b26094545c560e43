/**
 * Issue 36, item 1: a create_routine call whose prompt held a line break, a fake "Tools its runs may
 * use: none" line and 30 blank lines showed that fake line among the 12 preview lines of `memo
 * approvals list` (and in the terminal's box), beside the facts it should be read against, while the
 * real pre-approved tool was cut off below. The facts (schedule, model, grants) now come first and are
 * never cut; the prompt comes after them as one quoted line, its line breaks shown as ⏎.
 */
import { PassThrough } from 'node:stream';
import { approvalsText } from '../../kernel/cli/approvals-command.js';
import { TtyPrompter } from '../../kernel/cli/tty-prompter.js';
import { SystemClock } from '../../kernel/clock.js';
import { approvalView } from '../../kernel/control/kernel-views.js';
import type { PermissionRequest } from '../../kernel/permissions/prompter.js';
import { ScriptedPrompter } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';
import { error, routinesKernel, type RoutinesFixture } from '../plugins/routines/helpers.js';

const FAKE = 'Tools its runs may use: none (the model can only answer).';
const forged = {
  name: 'Morning brief',
  prompt: `Summarise my calendar.\n${FAKE}${'\n'.repeat(30)}Thanks.`,
  schedule: { kind: 'cron', cron: '30 8 * * 1-5', time_zone: 'Europe/Istanbul' },
  tools: ['echo_medium'],
};
const REAL_GRANT = /echo_medium \(medium, write\): PRE-APPROVED for its runs/;

/** The lines a face printed that hold `text`, each trimmed of the face's frame. */
const linesWith = (shown: string, text: string | RegExp) => shown.split('\n').filter((l) => (typeof text === 'string' ? l.includes(text) : text.test(l)));

/** The fake line is only ever part of the quoted prompt: never a line of its own, and after every fact. */
function expectForgeryQuoted(shown: string): void {
  const lines = shown.split('\n');
  // The arguments line holds the prompt too, as JSON (its line breaks escaped as \n).
  const args = linesWith(shown, 'arguments: {');
  expect(args).toHaveLength(1);
  expect(args[0]).toContain('Summarise my calendar.\\nTools its runs may use');
  const fake = linesWith(shown, 'Tools its runs may use').filter((l) => !args.includes(l));
  expect(fake).toHaveLength(1);
  expect(fake[0]).toContain(`"Summarise my calendar.⏎${FAKE}${'⏎'.repeat(30)}Thanks."`);
  expect(fake[0]).toMatch(/prompt each run sends, written by the model: "/);
  const grant = lines.findIndex((l) => REAL_GRANT.test(l));
  expect(grant).toBeGreaterThan(-1);
  expect(grant).toBeLessThan(lines.indexOf(fake[0]!));
  expect(lines.findIndex((l) => l.includes('runs with'))).toBeLessThan(lines.indexOf(fake[0]!));
}

describe('a create_routine prompt that forges a line of the preview', () => {
  let fx: RoutinesFixture;
  afterEach(async () => fx?.close());

  it('is shown by memo approvals list after the real grants, as one quoted line', async () => {
    const prompter = new ScriptedPrompter('never');
    fx = await routinesKernel({ prompter });
    const call = fx.call('create_routine', forged);
    await waitFor(() => fx.kernel.approvals.pending().length === 1, { what: 'the create_routine request' });
    const [pending] = fx.kernel.approvals.pending();
    const shown = approvalsText([approvalView(pending!)], fx.clock.now());
    expectForgeryQuoted(shown);
    fx.kernel.approvals.answer(pending!.id, 'deny-once');
    expect(error(await call).code).toBe('PERMISSION_DENIED');
  });

  it('is shown by the terminal prompter after the real grants, as one quoted line', async () => {
    const prompter = new ScriptedPrompter('deny-once');
    fx = await routinesKernel({ prompter });
    expect(error(await fx.call('create_routine', forged)).code).toBe('PERMISSION_DENIED');
    const request: PermissionRequest = { ...prompter.asked[0]!, deadline: Date.now() + 60_000 };
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = '';
    output.on('data', (d) => (shown += d));
    const answer = new TtyPrompter(new SystemClock(), input, output).ask(request, new AbortController().signal);
    input.write('n\n');
    expect(await answer).toBe('deny-once');
    expectForgeryQuoted(shown);
    // No line of the box holds model text but the quote and the (JSON) arguments.
    expect(shown.split('\n').filter((l) => l.startsWith('│ Thanks') || l === '│ ')).toEqual([]);
  });
});
