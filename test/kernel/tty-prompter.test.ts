import { PassThrough } from 'node:stream';
import { TtyPrompter } from '../../kernel/cli/tty-prompter.js';
import { SystemClock } from '../../kernel/clock.js';
import type { PermissionRequest } from '../../kernel/permissions/prompter.js';

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
    deadline: Date.now() + 60_000,
    ...extra,
  };
}

function setup() {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (d) => (shown += d));
  return { input, output, shown: () => shown, prompter: new TtyPrompter(new SystemClock(), input, output) };
}

describe('the terminal prompter', () => {
  it('shows tool, danger, masked arguments, the preview and the time left, then takes the answer', async () => {
    const t = setup();
    const answer = t.prompter.ask(request(), new AbortController().signal);
    t.input.write('a\n');
    expect(await answer).toBe('allow-forever');
    expect(t.shown()).toContain('write_file (fs-tools) ─ medium, write');
    expect(t.shown()).toContain('"token":"[masked]"');
    expect(t.shown()).toContain('+new line');
    expect(t.shown()).toMatch(/answer \(\d+ s left\)/);
  });

  it('asks again on an unknown key and maps N to deny-forever', async () => {
    const t = setup();
    const answer = t.prompter.ask(request(), new AbortController().signal);
    t.input.write('maybe\nN\n');
    expect(await answer).toBe('deny-forever');
  });

  it('does not offer standing approvals for a delete, and ignores their keys', async () => {
    const t = setup();
    const answer = t.prompter.ask(request({ effect: 'delete', standingApprovalAllowed: false }), new AbortController().signal);
    t.input.write('a\ny\n');
    expect(await answer).toBe('allow-once');
    expect(t.shown()).not.toContain('always allow');
  });

  it('denies when input ends or the prompt is withdrawn', async () => {
    const t = setup();
    const a = t.prompter.ask(request(), new AbortController().signal);
    t.input.end();
    expect(await a).toBe('deny-once');
    const t2 = setup();
    const ac = new AbortController();
    const b = t2.prompter.ask(request(), ac.signal);
    ac.abort();
    expect(await b).toBe('deny-once');
  });
});
