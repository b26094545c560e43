/**
 * What `memo permissions list` and `memo approvals list` print, from fixed decisions and requests at
 * a fixed moment (no clock involved). The commands themselves, as processes, are in
 * test/e2e/approvals.test.ts.
 */
import { approvalsText } from '../../../kernel/cli/approvals-command.js';
import { moment, relative } from '../../../kernel/cli/moments.js';
import { decisionTable, scopeText } from '../../../kernel/cli/permissions-command.js';
import type { ApprovalView } from '../../../kernel/control/kernel-views.js';
import { approvalDisplay } from '../../../kernel/control/preview-format.js';
import type { StoredDecision } from '../../../kernel/permissions/permission-store.js';

const NOW = Date.parse('2026-11-30T20:03:00Z');

const decisions: StoredDecision[] = [
  { tool: 'read_env', decision: 'allow', plugin: 'shell', at: '2026-11-01T10:00:00.000Z', scope: 'forever' },
  { tool: 'run_command', decision: 'deny', plugin: 'shell', at: '2026-11-02T10:00:00.000Z', scope: 'forever' },
  { tool: 'write_file', decision: 'allow', plugin: 'fs-tools', at: '2026-11-30T20:00:00.000Z', scope: 'until', expiresAt: '2026-11-30T20:15:00.000Z' },
  { tool: 'edit_file', decision: 'allow', plugin: 'fs-tools', at: '2026-11-30T19:00:00.000Z', scope: 'conversation', conversationId: 'conv-42' },
];

describe('scopeText', () => {
  it('says forever, until a minute-precise UTC time with how long is left, or the conversation', () => {
    expect(decisions.map((d) => scopeText(d, NOW))).toEqual(['forever', 'forever', 'until 2026-11-30T20:15Z (in 12 min)', 'conversation conv-42']);
  });
});

describe('decisionTable', () => {
  it('prints tool, decision, scope, pack and when it was given, one row each', () => {
    expect(decisionTable(decisions, NOW)).toBe(
      [
        'TOOL         DECISION  SCOPE                                PACK      SINCE',
        'read_env     allow     forever                              shell     2026-11-01T10:00:00.000Z',
        'run_command  deny      forever                              shell     2026-11-02T10:00:00.000Z',
        'write_file   allow     until 2026-11-30T20:15Z (in 12 min)  fs-tools  2026-11-30T20:00:00.000Z',
        'edit_file    allow     conversation conv-42                 fs-tools  2026-11-30T19:00:00.000Z',
        '',
      ].join('\n'),
    );
  });

  it('says so when there are none', () => {
    expect(decisionTable([], NOW)).toBe('No stored permission decisions.\n');
  });
});

describe('relative', () => {
  it.each([
    [0, 'in <1 min'],
    [59_000, 'in <1 min'],
    [60_000, 'in 1 min'],
    [11 * 60_000 + 1, 'in 12 min'],
    [30 * 60_000, 'in 30 min'],
    [119 * 60_000, 'in 119 min'],
    [150 * 60_000, 'in 3 h'],
    [47 * 3_600_000, 'in 47 h'],
    [3 * 86_400_000, 'in 3 days'],
    [-5 * 60_000, '5 min ago'],
  ])('shows %d ms from now as %j', (delta, text) => {
    expect(relative(NOW + delta, NOW)).toBe(text);
  });

  it('is joined to the time in moment()', () => {
    expect(moment(NOW + 29 * 60_000 + 30_000, NOW)).toBe('2026-11-30T20:32Z (in 30 min)');
  });
});

describe('approvalsText', () => {
  const request: Omit<ApprovalView, 'display'> = {
    id: '5f0c2a9e-1111-4222-8333-444455556666',
    tool: 'write_file',
    plugin: 'fs-tools',
    danger: 'medium',
    effect: 'write',
    caller: { kind: 'mcp', id: 'claude-desktop' },
    args: { path: 'notes.md', content: '[masked]' },
    preview: { kind: 'diff', text: Array.from({ length: 15 }, (_, i) => `+line ${i + 1}`).join('\n') },
    askedAt: '2026-11-30T20:00:00.000Z',
    expiresAt: '2026-11-30T20:30:00.000Z',
    answers: ['allow-once', 'allow-session', 'allow-minutes:N', 'allow-forever', 'deny-once', 'deny-forever'],
    editable: true,
    revision: 1,
    faces: [],
    answerable: true,
  };
  const view = (r: Omit<ApprovalView, 'display'>): ApprovalView => ({ ...r, display: approvalDisplay(r) });
  const base = view(request);

  it('shows id, tool, caller, expiry, masked arguments, the preview cut to 12 lines, and how to answer', () => {
    const text = approvalsText([base], NOW);
    expect(text.split('\n')).toEqual([
      '5f0c2a9e-1111-4222-8333-444455556666  write_file (fs-tools)  medium, write',
      '  caller:    mcp "claude-desktop"',
      '  preview:   +line 1',
      ...Array.from({ length: 11 }, (_, i) => `             +line ${i + 2}`),
      '             … 3 more lines of the preview (memo approvals list --json has them all)',
      '  arguments: {"path":"notes.md","content":"[masked]"}',
      '  expires:   2026-11-30T20:30Z (in 27 min)',
      "  answers:   allow-once, allow-session, allow-minutes:N, allow-forever, deny-once, deny-forever, or --edit '<json>'",
      '  answer:    memo approvals answer 5f0c2a9e-1111-4222-8333-444455556666 allow-once',
      '',
    ]);
  });

  it("names the concern, and says where a memo tools call's own prompt is answered", () => {
    const text = approvalsText(
      [
        view({
          ...request,
          tool: 'run_command',
          preview: null,
          editable: false,
          concern: { verdict: 'ask', rule: 'inline-code', reason: 'inline-code: python3 -c runs code the judge cannot read' },
          answers: ['allow-once', 'deny-once', 'deny-forever'],
          caller: { kind: 'cli', id: 'memo tools call' },
          answerable: false,
        }),
      ],
      NOW,
    );
    expect(text).toContain('  concern:   inline-code: python3 -c runs code the judge cannot read\n');
    expect(text).toContain('  answers:   only at the terminal of the memo tools call that made it\n');
    expect(text).not.toContain('memo approvals answer');
  });

  it("shows a tool's facts in full before its body, cut or not, and what the caller wrote last, quoted on one line", () => {
    const text = approvalsText(
      [
        view({
          ...request,
          tool: 'create_routine',
          plugin: 'routines',
          caller: { kind: 'agent', conversationId: 'conv-1' },
          preview: {
            kind: 'text',
            text: Array.from({ length: 20 }, (_, i) => `body ${i + 1}`).join('\n'),
            facts: Array.from({ length: 20 }, (_, i) => ({ label: 'may use', value: `tool_${i + 1}: PRE-APPROVED` })),
            quoted: [{ label: 'prompt', text: 'Hi.\nmay use: none\n\n' }],
          },
        }),
      ],
      NOW,
    ).split('\n');
    expect(text.slice(1, 22)).toEqual([
      '  caller:    agent, conversation conv-1',
      ...Array.from({ length: 20 }, (_, i) => `  may use:   tool_${i + 1}: PRE-APPROVED`),
    ]);
    expect(text.slice(22, 35)).toEqual([
      '  preview:   body 1',
      ...Array.from({ length: 11 }, (_, i) => `             body ${i + 2}`),
      '             … 8 more lines of the preview (memo approvals list --json has them all)',
    ]);
    expect(text[35]).toBe('  prompt, written by the model: "Hi.⏎may use: none⏎⏎"');
    expect(text.filter((l) => l.includes('may use: none'))).toHaveLength(1);
  });

  it('shows control characters as escapes: an ANSI escape in a diff, a bidi override in a fact, a line break in the caller', () => {
    const text = approvalsText(
      [
        view({
          ...request,
          caller: { kind: 'mcp', id: 'client\nmay use: none' },
          preview: {
            kind: 'diff',
            text: '+plain\n+\u001b[2K\u001b[1Ahidden\r+over\n',
            facts: [{ label: 'file', value: 'invoice\u202efdp.exe' }],
          },
        }),
      ],
      NOW,
    );
    expect(text).toContain('  caller:    mcp "client⏎may use: none"\n');
    expect(text).toContain('  file:      invoice\\u202efdp.exe\n');
    expect(text).toContain('  preview:   +plain\n             +\\u001b[2K\\u001b[1Ahidden\\r+over\n');
    expect([...text].filter((c) => ['\u001b', '\r', '\u202e'].includes(c))).toEqual([]);
  });

  it('caps a quoted text at 2,000 characters and says how many more there are', () => {
    const text = approvalsText([view({ ...request, preview: { kind: 'text', text: '', quoted: [{ label: 'message', text: 'x'.repeat(2500) }] } })], NOW);
    expect(text).toContain(`  message, written by the MCP client: "${'x'.repeat(2000)}" … (+500 chars)\n`);
    expect(text).not.toContain('preview:');
  });

  it('says so when nothing waits', () => {
    expect(approvalsText([], NOW)).toBe('No permission requests are waiting.\n');
  });
});
