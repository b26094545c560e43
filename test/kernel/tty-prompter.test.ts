import { PassThrough } from 'node:stream';
import { TtyPrompter } from '../../kernel/cli/tty-prompter.js';
import { ManualClock, SystemClock, type Clock } from '../../kernel/clock.js';
import { ApprovalWithdrawn, PermissionAnswers, type PermissionRequest } from '../../kernel/permissions/prompter.js';

const EVERY_ANSWER = [...PermissionAnswers, 'allow-minutes'];

function request(extra: Partial<PermissionRequest> = {}): PermissionRequest {
  return {
    callId: 'c1',
    tool: 'write_file',
    plugin: 'fs-tools',
    danger: 'medium',
    effect: 'write',
    args: { path: 'a.txt', token: '[masked]' },
    preview: { kind: 'diff', text: '--- a.txt\n+++ a.txt\n+new line' },
    caller: { kind: 'cli' },
    standingApprovalAllowed: true,
    answers: EVERY_ANSWER,
    editable: false,
    revision: 1,
    deadline: Date.now() + 60_000,
    ...extra,
  };
}

function setup(clock: Clock = new SystemClock()) {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (d) => (shown += d));
  return { input, output, shown: () => shown, prompter: new TtyPrompter(clock, input, output) };
}

/** Lets the output stream deliver what was written. */
const settle = () => new Promise((r) => setImmediate(r));

describe('the terminal prompter', () => {
  it('is the face named terminal', () => {
    expect(setup().prompter.name).toBe('terminal');
  });

  it('shows tool, danger, masked arguments, the preview and the time left, then takes the answer', async () => {
    const t = setup();
    const answer = t.prompter.ask(request(), new AbortController().signal);
    t.input.write('a\n');
    expect(await answer).toBe('allow-forever');
    expect(t.shown()).toContain('write_file (fs-tools) ─ medium, write');
    expect(t.shown()).toContain('"token":"[masked]"');
    expect(t.shown()).toContain('+new line');
    expect(t.shown()).toMatch(/answer \(\d+ s left\)/);
    expect(t.shown()).not.toContain('revision');
  });

  it.each([
    ['y', 'allow-once'],
    ['Y', 'allow-once'],
    ['c', 'allow-conversation'],
    ['s', 'allow-session'],
    ['a', 'allow-forever'],
    ['n', 'deny-once'],
    ['N', 'deny-forever'],
  ])('answers %s with %s', async (key, expected) => {
    const t = setup();
    const answer = t.prompter.ask(request(), new AbortController().signal);
    t.input.write(`${key}\n`);
    expect(await answer).toBe(expected);
  });

  it('offers every listed answer with its key', async () => {
    const t = setup();
    const answer = t.prompter.ask(request(), new AbortController().signal);
    t.input.write('y\n');
    await answer;
    expect(t.shown()).toContain(
      '└ [y] allow once  [c] allow for this conversation  [s] allow for this session  [m] allow for N minutes  [a] always allow  [n] deny  [N] always deny\n',
    );
  });

  it('asks again on an unknown key and maps N to deny-forever', async () => {
    const t = setup();
    const answer = t.prompter.ask(request(), new AbortController().signal);
    t.input.write('maybe\nN\n');
    expect(await answer).toBe('deny-forever');
    expect(t.shown().match(/answer \(/g)).toHaveLength(2);
  });

  it('offers only the answers the request lists, and ignores the keys of the others', async () => {
    const t = setup();
    const answer = t.prompter.ask(request({ answers: ['allow-once', 'allow-session', 'deny-once'] }), new AbortController().signal);
    t.input.write('c\nm\na\nN\ns\n');
    expect(await answer).toBe('allow-session');
    expect(t.shown()).toContain('└ [y] allow once  [s] allow for this session  [n] deny\n');
  });

  it('does not offer standing approvals for a delete, says why, and ignores their keys', async () => {
    const t = setup();
    const answer = t.prompter.ask(request({ effect: 'delete', standingApprovalAllowed: false }), new AbortController().signal);
    t.input.write('a\ns\nc\nm\ny\n');
    expect(await answer).toBe('allow-once');
    expect(t.shown()).not.toContain('always allow');
    expect(t.shown()).not.toContain('minutes');
    expect(t.shown()).toContain('│ (deletes always ask: no standing approval)');
  });

  it('shows the concern of the call and caps the preview at 40 lines', async () => {
    const t = setup();
    const text = Array.from({ length: 45 }, (_, i) => `line ${i + 1}`).join('\n');
    const answer = t.prompter.ask(
      request({
        preview: { kind: 'text', text },
        concern: { verdict: 'ask', rule: 'inline-code', reason: 'runs inline code' },
        standingApprovalAllowed: false,
      }),
      new AbortController().signal,
    );
    t.input.write('n\n');
    expect(await answer).toBe('deny-once');
    expect(t.shown()).toContain('│ line 40\n');
    expect(t.shown()).not.toContain('line 41');
    expect(t.shown()).toContain('│ … 5 more lines of the preview\n');
    expect(t.shown()).toContain('│ concern: runs inline code (inline-code)');
    expect(t.shown()).toContain('│ (such calls always ask: no standing approval)');
  });

  it("shows every fact of the tool before the body, however many, then the caller's text quoted on one line", async () => {
    const t = setup();
    const answer = t.prompter.ask(
      request({
        caller: { kind: 'agent', conversationId: 'conv-1' },
        preview: {
          kind: 'text',
          text: Array.from({ length: 45 }, (_, i) => `line ${i + 1}`).join('\n'),
          facts: Array.from({ length: 50 }, (_, i) => ({ label: 'may use', value: `tool_${i + 1}` })),
          quoted: [{ label: 'prompt', text: 'Hi.\nmay use: none' }],
        },
      }),
      new AbortController().signal,
    );
    t.input.write('n\n');
    await answer;
    const lines = t.shown().split('\n');
    const first = lines.indexOf('│ may use: tool_1');
    expect(lines.slice(first, first + 50)).toEqual(Array.from({ length: 50 }, (_, i) => `│ may use: tool_${i + 1}`));
    expect(lines.slice(first + 50, first + 52)).toEqual(['│ line 1', '│ line 2']);
    expect(lines[first + 90]).toBe('│ … 5 more lines of the preview');
    expect(lines[first + 91]).toBe('│ prompt, written by the model: "Hi.⏎may use: none"');
  });

  it('prints no control character of a preview or of the arguments: an ANSI escape cannot move the cursor', async () => {
    const t = setup();
    const answer = t.prompter.ask(
      request({
        args: { path: 'a.txt', content: 'x\u009b2J\u2028' },
        preview: { kind: 'diff', text: '--- a.txt\n+++ a.txt\n+\u001b[1A\u001b[2Kallow-once\r+new line\n' },
      }),
      new AbortController().signal,
    );
    t.input.write('n\n');
    await answer;
    expect(t.shown()).toContain('│ +\\u001b[1A\\u001b[2Kallow-once\\r+new line\n');
    expect(t.shown()).toContain('│ arguments: {"path":"a.txt","content":"x\\u009b2J\\u2028"}\n');
    expect([...t.shown()].filter((c) => ['\u001b', '\r', '\u009b', '\u2028'].includes(c))).toEqual([]);
  });

  describe('allow for N minutes', () => {
    it('asks for how many minutes and answers allow-minutes:N', async () => {
      const t = setup();
      const answer = t.prompter.ask(request(), new AbortController().signal);
      t.input.write('m\n30\n');
      expect(await answer).toBe('allow-minutes:30');
      expect(t.shown()).toContain('for how many minutes?');
    });

    it('asks again until the minutes are a whole number from 1 to 525600', async () => {
      const t = setup();
      const answer = t.prompter.ask(request(), new AbortController().signal);
      t.input.write('M\n0\nabc\n525601\n1.5\n-3\n525600\n');
      expect(await answer).toBe('allow-minutes:525600');
      expect(t.shown().match(/for how many minutes\?/g)).toHaveLength(6);
      expect(t.shown().match(/a whole number of minutes from 1 to 525600/g)).toHaveLength(5);
    });

    it('goes back to the choice on an empty line', async () => {
      const t = setup();
      const answer = t.prompter.ask(request(), new AbortController().signal);
      t.input.write('m\n\ny\n');
      expect(await answer).toBe('allow-once');
    });
  });

  describe('editing the arguments', () => {
    it('is not offered for a tool that takes no edits', async () => {
      const t = setup();
      const answer = t.prompter.ask(request(), new AbortController().signal);
      t.input.write('e\ny\n');
      expect(await answer).toBe('allow-once');
      expect(t.shown()).not.toContain('[e]');
      expect(t.shown()).not.toContain('current arguments');
    });

    it('shows the current arguments and replies with the edited ones', async () => {
      const t = setup();
      const answer = t.prompter.ask(request({ editable: true }), new AbortController().signal);
      t.input.write('e\n{"path":"b.txt","token":"[masked]"}\n');
      expect(await answer).toEqual({ edit: { path: 'b.txt', token: '[masked]' } });
      expect(t.shown()).toContain('[e] edit the arguments');
      expect(t.shown()).toContain('current arguments: {"path":"a.txt","token":"[masked]"}\n');
      expect(t.shown()).toContain('new arguments (one line of JSON');
    });

    it('says why a line is not JSON or not an object, and asks again', async () => {
      const t = setup();
      const answer = t.prompter.ask(request({ editable: true }), new AbortController().signal);
      t.input.write('e\n{path: b.txt}\n["b.txt"]\nnull\n"b.txt"\n{"path":"c.txt"}\n');
      expect(await answer).toEqual({ edit: { path: 'c.txt' } });
      expect(t.shown()).toMatch(/not valid JSON \(.+\)\n/);
      expect(t.shown()).toContain('the arguments must be a JSON object, not an array\n');
      expect(t.shown()).toContain('the arguments must be a JSON object, not null\n');
      expect(t.shown()).toContain('the arguments must be a JSON object, not string\n');
      expect(t.shown().match(/new arguments \(/g)).toHaveLength(5);
    });

    it('goes back to the choice on an empty line', async () => {
      const t = setup();
      const answer = t.prompter.ask(request({ editable: true }), new AbortController().signal);
      t.input.write('e\n\nn\n');
      expect(await answer).toBe('deny-once');
    });

    it('shows who edited the arguments and the revision, and why an edit was refused', async () => {
      const t = setup();
      const answer = t.prompter.ask(
        request({ editable: true, revision: 2, editedBy: 'terminal', editProblem: 'path must be string' }),
        new AbortController().signal,
      );
      t.input.write('y\n');
      expect(await answer).toBe('allow-once');
      expect(t.shown()).toContain('│ revision: 2, edited by terminal\n');
      expect(t.shown()).toContain('│ edit refused: path must be string\n');
    });
  });

  describe('when the question is withdrawn', () => {
    it.each([
      ['answered by another face', new ApprovalWithdrawn('answered', 'console'), '(answered elsewhere by console)'],
      ['timed out', new ApprovalWithdrawn('timeout'), '(no answer in time: denied)'],
      ['expired', new ApprovalWithdrawn('expired'), '(request expired)'],
      ['cancelled', new ApprovalWithdrawn('cancelled'), '(call cancelled: denied)'],
      ['detached', new ApprovalWithdrawn('detached'), '(withdrawn)'],
      ['aborted for a reason it does not know', new Error('some other reason'), '(withdrawn)'],
    ])('says in one line that it was %s', async (_why, reason, line) => {
      const t = setup();
      const ac = new AbortController();
      const answer = t.prompter.ask(request(), ac.signal);
      ac.abort(reason);
      expect(await answer).toBe('deny-once');
      await settle();
      expect(t.shown().endsWith(`\n${line}\n`)).toBe(true);
      expect(t.shown().match(/\n\(/g)).toHaveLength(1);
      // Input typed afterwards is not taken as an answer to anything.
      t.input.write('y\n');
      await settle();
      expect(t.shown().endsWith(`\n${line}\n`)).toBe(true);
    });

    it('says why at once when the question was withdrawn before it was shown', async () => {
      const t = setup();
      const ac = new AbortController();
      ac.abort(new ApprovalWithdrawn('answered', 'console'));
      expect(await t.prompter.ask(request(), ac.signal)).toBe('deny-once');
      await settle();
      expect(t.shown()).toContain('(answered elsewhere by console)\n');
      expect(t.shown()).not.toContain('answer (');
    });

    it('prints nothing more once this face has answered, even when the signal aborts afterwards', async () => {
      const t = setup();
      const ac = new AbortController();
      const answer = t.prompter.ask(request(), ac.signal);
      t.input.write('y\n');
      expect(await answer).toBe('allow-once');
      await settle();
      const before = t.shown();
      // The broker withdraws the question from every face once an answer arrives, this one's included.
      ac.abort(new ApprovalWithdrawn('answered', 'terminal'));
      await settle();
      expect(t.shown()).toBe(before);
      expect(t.shown()).not.toMatch(/withdrawn|elsewhere|denied/);
    });

    it('prints nothing more once its input has ended, even when the signal aborts afterwards', async () => {
      const t = setup();
      const ac = new AbortController();
      const answer = t.prompter.ask(request(), ac.signal);
      t.input.end();
      await expect(answer).rejects.toThrow("the terminal's input ended before an answer");
      await settle();
      const before = t.shown();
      ac.abort(new ApprovalWithdrawn('timeout'));
      await settle();
      expect(t.shown()).toBe(before);
    });
  });

  it('refuses to answer when its input ends, so that another face still may', async () => {
    const t = setup();
    const answer = t.prompter.ask(request(), new AbortController().signal);
    t.input.write('maybe\n');
    t.input.end();
    await expect(answer).rejects.toThrow("the terminal's input ended before an answer");
  });

  describe('the countdown', () => {
    // The countdown runs on the prompter's clock: here a manual one, moved by the test.
    function started() {
      const clock = new ManualClock();
      const t = setup(clock);
      const ac = new AbortController();
      let outcome: string | null = null;
      const answer = t.prompter.ask(request({ deadline: clock.now() + 60_000 }), ac.signal);
      answer.then(
        (r) => (outcome = `answered ${JSON.stringify(r)}`),
        (e: Error) => (outcome = `refused: ${e.message}`),
      );
      const passes = async (ms: number) => {
        clock.advance(ms);
        await settle();
      };
      return { ...t, clock, ac, answer, passes, outcome: () => outcome };
    }

    it('shows the time left again every ten seconds', async () => {
      const t = started();
      expect(t.shown()).toContain('answer (60 s left): ');
      await t.passes(10_000);
      expect(t.shown()).toContain('\nanswer (50 s left): ');
      t.input.write('y\n');
      expect(await t.answer).toBe('allow-once');
      // Settled, it leaves no timer behind.
      expect(t.clock.pending).toBe(0);
    });

    it('leaves the timeout to the asker at the deadline, and then says it once', async () => {
      const t = started();
      await t.passes(64_000);
      expect(t.outcome()).toBeNull();
      expect(t.clock.pending).toBe(1);
      expect(t.shown()).not.toContain('(no answer in time');
      t.ac.abort(new ApprovalWithdrawn('timeout'));
      await settle();
      expect(t.outcome()).toBe('answered "deny-once"');
      expect(t.shown().endsWith('\n(no answer in time: denied)\n')).toBe(true);
      expect(t.clock.pending).toBe(0);
    });

    it('gives up by itself, as a face that could not answer, when nobody withdraws the question after its deadline', async () => {
      const t = started();
      await t.passes(60_000 + 5_000);
      await expect(t.answer).rejects.toThrow('nobody answered on the terminal in time');
      expect(t.shown().endsWith('\n(no answer in time: denied)\n')).toBe(true);
    });
  });
});
