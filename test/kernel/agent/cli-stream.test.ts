import { CliStreamReader } from '../../../kernel/agent/cli-backends/cli-stream.js';

const read = (format: 'claude-stream-json' | 'codex-jsonl', lines: unknown[]) => {
  const reader = new CliStreamReader(format);
  return lines.flatMap((l) => reader.line(typeof l === 'string' ? l : JSON.stringify(l)));
};

describe('reading the CLIs streams', () => {
  it('Claude Code: its own tools keep their name under claude:, Memo tools lose the mcp__memo__ prefix, banners and partial lines are ignored', () => {
    const events = read('claude-stream-json', [
      'Welcome to Claude Code!',
      '{"type":"assistant", "message": {',
      {
        type: 'assistant',
        message: {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls -la', description: 'List files' } },
            { type: 'tool_use', id: 'toolu_2', name: 'mcp__memo__vault_search', input: { query: 'oat milk' } },
          ],
        },
        session_id: 's',
      },
      {
        type: 'user',
        message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'total 0', is_error: false }] },
        session_id: 's',
      },
      { type: 'result', subtype: 'error_max_turns', is_error: true, num_turns: 3, session_id: 's', errors: ['Reached maximum number of turns (3)'] },
    ]);
    expect(events).toEqual([
      { type: 'tool_start', id: 'toolu_1', tool: 'claude:Bash', args: { command: 'ls -la', description: 'List files' } },
      { type: 'tool_start', id: 'toolu_2', tool: 'vault_search', args: { query: 'oat milk' } },
      { type: 'tool_end', id: 'toolu_1', ok: true, summary: 'total 0' },
      { type: 'failed', message: 'Reached maximum number of turns (3)' },
    ]);
  });

  it("Codex: its shell commands, file changes and web searches are steps of their own; another MCP server's tool is named with it", () => {
    const events = read('codex-jsonl', [
      {
        type: 'item.started',
        item: { id: 'item_0', type: 'command_execution', command: 'bash -lc ls', aggregated_output: '', exit_code: null, status: 'in_progress' },
      },
      {
        type: 'item.completed',
        item: { id: 'item_0', type: 'command_execution', command: 'bash -lc ls', aggregated_output: 'notes.txt\n', exit_code: 0, status: 'completed' },
      },
      { type: 'item.completed', item: { id: 'item_1', type: 'file_change', changes: [{ path: 'notes.txt', kind: 'update' }], status: 'completed' } },
      { type: 'item.started', item: { id: 'item_2', type: 'web_search', query: 'oat milk price', action: { type: 'search' } } },
      { type: 'item.completed', item: { id: 'item_2', type: 'web_search', query: 'oat milk price', action: { type: 'search' } } },
      {
        type: 'item.started',
        item: { id: 'item_3', type: 'mcp_tool_call', server: 'github', tool: 'list_issues', arguments: {}, result: null, error: null, status: 'in_progress' },
      },
      {
        type: 'item.completed',
        item: {
          id: 'item_3',
          type: 'mcp_tool_call',
          server: 'github',
          tool: 'list_issues',
          arguments: {},
          result: null,
          error: { message: 'unauthorized' },
          status: 'failed',
        },
      },
      { type: 'error', message: 'stream disconnected before completion' },
    ]);
    expect(events).toEqual([
      { type: 'tool_start', id: 'item_0', tool: 'codex:shell', args: { command: 'bash -lc ls' } },
      { type: 'tool_end', id: 'item_0', tool: 'codex:shell', ok: true, summary: 'notes.txt' },
      { type: 'tool_start', id: 'item_1', tool: 'codex:file_change', args: {} },
      { type: 'tool_end', id: 'item_1', tool: 'codex:file_change', ok: true, summary: 'update notes.txt' },
      { type: 'tool_start', id: 'item_2', tool: 'codex:web_search', args: { query: 'oat milk price' } },
      { type: 'tool_end', id: 'item_2', tool: 'codex:web_search', ok: true, summary: 'oat milk price' },
      { type: 'tool_start', id: 'item_3', tool: 'codex:github/list_issues', args: {} },
      { type: 'tool_end', id: 'item_3', tool: 'codex:github/list_issues', ok: false, summary: 'unauthorized' },
      { type: 'failed', message: 'stream disconnected before completion' },
    ]);
  });
});
