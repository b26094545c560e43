import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AgentEvent } from '../../../kernel/agent/agent-loop.js';
import { runChatTurn } from '../../../kernel/agent/chat-turn.js';
import { verifyAuditFile } from '../../../kernel/audit/audit-verify.js';
import { BACKENDS } from '../../../kernel/agent/cli-backends/backends.js';
import { CliDetector, DETECTION_TTL_MS } from '../../../kernel/agent/cli-backends/cli-detector.js';
import { loopbackEndpoint } from '../../../kernel/mcp/mcp-http-server.js';
import { CliBackends, runCliTurn } from '../../../kernel/agent/cli-backends/cli-turn.js';
import { containmentInfo } from '../../../kernel/sandbox/process-runner.js';
import type { PackDefinition } from '../../../kernel/tools/tool-registry.js';
import type { KernelOptions } from '../../../kernel/kernel.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { mcpCall, recordedRuns, runProcesses, versionChecks, writeFakeClis } from './fake-clis.js';

/** A write tool and a read tool the fake CLIs call over MCP. */
function notesPack(written: string[]): PackDefinition {
  return {
    id: 'notes',
    version: '1.0.0',
    modes: ['vault'],
    tools: [
      {
        spec: {
          name: 'computer_only',
          description: 'A tool Vault only does not offer.',
          parameters: { type: 'object' },
          danger: 'safe',
          effect: 'read',
          modes: [],
        },
        impl: () => 'ran',
      },
      {
        spec: {
          name: 'note_write',
          description: 'Appends a line to the notes.',
          parameters: { type: 'object', properties: { line: { type: 'string' } }, required: ['line'], additionalProperties: false },
          danger: 'medium',
          effect: 'write',
        },
        impl: {
          run: (args: Record<string, unknown>) => {
            written.push(String(args.line));
            return `wrote ${String(args.line)}`;
          },
          // The note the line went to: linked in the chat reply (seen by the kernel, not in the CLI's output).
          items: (_value: unknown, args: Record<string, unknown>) => [{ type: 'note' as const, id: 'n-1', title: `Notes (${String(args.line)})` }],
        },
      },
      {
        spec: {
          name: 'echo',
          description: 'Returns its text.',
          parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
          danger: 'safe',
          effect: 'read',
        },
        impl: (args: Record<string, unknown>) => String(args.text),
      },
    ],
  };
}

/** Kills what a fake CLI run left running, should a test fail before Memo did. */
function killLeftover(rec: string): void {
  for (const pid of runProcesses(rec)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

interface Setup {
  fx: Fixture;
  backends: CliBackends;
  bin: string;
  rec: string;
  home: string;
  written: string[];
  now: { t: number };
}

function setup(extraEnv: Record<string, string> = {}, kernel: Partial<KernelOptions> = {}): Setup {
  const written: string[] = [];
  const fx = makeKernel({ packs: [notesPack(written)], ...kernel });
  const bin = tempDir('memo-fake-bin-');
  const rec = tempDir('memo-fake-rec-');
  // A HOME of the test's own: nothing here runs with, or can write into, the real one.
  const home = tempDir('memo-fake-home-');
  writeFakeClis(bin);
  // The fake CLIs record each run there: a folder the person running Memo lets agent CLIs write.
  process.env.MEMO_CLI_WRITABLE = rec;
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, HOME: home, FAKE_CLI_RECORD: rec, ...extraEnv };
  const now = { t: 1_000_000 };
  const backends = new CliBackends(fx.kernel, {
    env,
    detector: new CliDetector({ env, loginShell: false, now: () => now.t }),
    start: () => loopbackEndpoint(fx.kernel),
  });
  return { fx, backends, bin, rec, home, written, now };
}

/** The agent-access events on a kernel's audit trail (one per turn handed to an agent CLI). */
function accessEvents(dataDir: string): Array<Record<string, unknown>> {
  return fs
    .readFileSync(path.join(dataDir, 'agent-audit.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.event === 'agent-access');
}

const containment = await containmentInfo();

describe('agent CLI backends (fake claude, codex and agy on PATH, a real MCP endpoint)', () => {
  let s: Setup;
  afterEach(async () => s?.fx.close());

  it('claude in Vault only: its write reaches this kernel over MCP with the turn capability, passes the gate once, and a replay after the turn is denied', async () => {
    s = setup();
    const conv = await s.fx.kernel.conversations.create();
    s.fx.prompter.answer('allow-once');
    const events: AgentEvent[] = [];
    const r = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('claude'),
      model: '',
      conversationId: conv.id,
      userMessage: 'write buy milk',
      titles: false,
      onEvent: (e) => events.push(e),
    });
    expect(r.error).toBeUndefined();
    expect(r.stopReason).toBe('final');
    expect(r.answer).toBe('Done: wrote buy milk');
    expect(s.written).toEqual(['buy milk']);
    // The gate asked the person once, about the MCP caller's write.
    expect(s.fx.prompter.asked).toHaveLength(1);
    expect(s.fx.prompter.asked[0]).toMatchObject({ tool: 'note_write', caller: { kind: 'mcp', conversationId: conv.id } });
    expect(r.steps).toEqual([expect.objectContaining({ tool: 'note_write', outcome: 'ok', summary: 'wrote buy milk' })]);
    // The items the result named reach the step through the kernel, since the CLI's output does not carry them.
    expect(r.steps[0]!.items).toEqual([{ type: 'note', id: 'n-1', title: 'Notes (buy milk)' }]);
    expect((await s.fx.kernel.conversations.activity(conv.id))[0]?.items).toEqual([{ type: 'note', id: 'n-1', title: 'Notes (buy milk)' }]);
    // The answer streamed as it arrived; the reasoning is kept beside the reply.
    expect(
      events
        .filter((e) => e.type === 'text_delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toBe('Done: wrote buy milk');
    expect(events).toContainEqual({ type: 'backend', backend: 'claude', label: 'Claude CLI', version: '2.1.3', access: 'vault' });
    expect(accessEvents(s.fx.dataDir)).toEqual([
      expect.objectContaining({ event: 'agent-access', backend: 'claude', access: 'vault', conversationId: conv.id }),
    ]);
    expect(r.reasoning).toEqual([{ message: 1, text: 'I should call note_write.' }]);

    // The audit has the call, by the MCP caller of this conversation.
    const audit = s.fx.kernel.audit.tail({}).filter((a) => a.tool === 'note_write');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ outcome: 'ok', caller: expect.objectContaining({ kind: 'mcp' }) });

    // What the CLI was started with: no built-in tools, only Memo's server, its config private and gone after.
    const [run] = recordedRuns(s.rec, 'claude');
    expect(run.argv.slice(0, 6)).toEqual(['-p', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--strict-mcp-config']);
    const flag = (name: string) => run.argv[run.argv.indexOf(name) + 1];
    expect(flag('--tools')).toBe('');
    expect(flag('--disallowedTools').split(',')).toEqual(expect.arrayContaining(['Bash', 'Edit', 'Write', 'Read', 'WebFetch', 'WebSearch']));
    expect(flag('--allowedTools')).toBe('mcp__memo');
    expect(run.configMode).toBe('600');
    expect(fs.existsSync(run.endpoint.configFile)).toBe(false);
    // Claude runs with the HOME it was given (the test's own), where its own settings live.
    expect(run.home).toBe(s.home);
    expect(run.home).not.toBe(process.env.HOME);
    expect(run.env.inheritedCapability).toBeNull();
    // The prompt went on stdin, never in argv.
    expect(run.argv.join(' ')).not.toContain('buy milk');

    // Stored like any other turn: the provider is the backend, the model as the CLI reported it.
    const stored = await s.fx.kernel.conversations.messages!(conv.id);
    expect(stored.map((m) => [m.role, m.content])).toEqual([
      ['user', 'write buy milk'],
      ['assistant', 'Done: wrote buy milk'],
    ]);
    expect(stored[1]).toMatchObject({ provider: 'claude-cli', model: 'claude-sonnet-4-5-20250929' });

    // The capability died with the turn: the same token and capability, replayed, cannot write.
    const replay = await mcpCall(run.endpoint.url, run.endpoint.headers, 'note_write', { line: 'again' });
    expect(replay.isError).toBe(true);
    expect(replay.text).toMatch(/^PERMISSION_DENIED: .*writes need a running Memo agent turn/);
    expect(s.written).toEqual(['buy milk']);
    expect(s.fx.prompter.asked).toHaveLength(1);
    // ...while reads with the endpoint's token still work (an outside caller may read).
    expect(await mcpCall(run.endpoint.url, run.endpoint.headers, 'echo', { text: 'hi' })).toEqual({ isError: false, text: 'hi' });
  });

  it('codex in Vault only: shell, web search, patch, view_image, sub-agent, REPL and apps tools off, a read-only sandbox, and the token and capability only in its environment', async () => {
    s = setup();
    const conv = await s.fx.kernel.conversations.create();
    s.fx.prompter.answer('allow-once');
    const r = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('codex'),
      model: 'gpt-5-codex',
      conversationId: conv.id,
      userMessage: 'write ferns',
      titles: false,
    });
    expect(r.stopReason).toBe('final');
    expect(r.answer).toBe('Done: wrote ferns');
    expect(s.written).toEqual(['ferns']);
    expect(r.steps).toEqual([expect.objectContaining({ tool: 'note_write', outcome: 'ok' })]);
    expect(r.usage).toEqual({ inputTokens: 30, outputTokens: 9 });
    const [run] = recordedRuns(s.rec, 'codex');
    expect(run.argv.slice(0, 3)).toEqual(['exec', '--json', '--skip-git-repo-check']);
    expect(run.argv[run.argv.indexOf('--sandbox') + 1]).toBe('read-only');
    expect(run.argv).toEqual(
      expect.arrayContaining([
        'features.shell_tool=false',
        'features.unified_exec=false',
        'web_search="disabled"',
        'include_apply_patch_tool=false',
        'features.apply_patch_freeform=false',
        // view_image loads any local image by path, outside Memo's gate: both spellings off.
        'features.view_image_tool=false',
        'tools.view_image=false',
        'tools.web_search=false',
        'features.web_search_request=false',
        'features.multi_agent=false',
        'features.collab=false',
        'features.js_repl=false',
        'features.code_mode=false',
        'features.apps=false',
        'features.connectors=false',
        '--model',
        'gpt-5-codex',
      ]),
    );
    // Each of those is a `-c` override.
    for (const key of ['features.view_image_tool=false', 'tools.view_image=false']) expect(run.argv[run.argv.indexOf(key) - 1]).toBe('-c');
    expect(run.argv[run.argv.length - 1]).toBe('-');
    // The person's own MCP servers are emptied before Memo's is added.
    expect(run.argv.indexOf('mcp_servers={}')).toBeGreaterThan(-1);
    expect(run.argv.indexOf('mcp_servers={}')).toBeLessThan(run.argv.findIndex((a: string) => a.startsWith('mcp_servers.memo.url=')));
    expect(run.env.token).toEqual(expect.any(String));
    expect(run.env.capability).toMatch(/^memo-cap-/);
    const argv = run.argv.join(' ');
    expect(argv).not.toContain(run.env.token);
    expect(argv).not.toContain(run.env.capability);
    const stored = await s.fx.kernel.conversations.messages!(conv.id);
    expect(stored[1]).toMatchObject({ provider: 'codex-cli', model: 'gpt-5-codex' });
    const replay = await mcpCall(run.endpoint.url, run.endpoint.headers, 'note_write', { line: 'again' });
    expect(replay.text).toMatch(/^PERMISSION_DENIED/);
  });

  it('agy cannot be limited to Memo tools: Vault only is refused before it runs; with Computer access it runs with a temporary HOME and the access is recorded', async () => {
    const realGemini = () => {
      const file = path.join(os.homedir(), '.gemini', 'config', 'mcp_config.json');
      return fs.existsSync(file) ? fs.statSync(file).mtimeMs : null;
    };
    const realGeminiBefore = realGemini();
    s = setup();
    const conv = await s.fx.kernel.conversations.create();
    const refused = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('agy'),
      model: '',
      conversationId: conv.id,
      userMessage: 'write x',
      titles: false,
    });
    expect(refused.stopReason).toBe('error');
    expect(refused.error).toMatch(/^Antigravity CLI cannot be limited to Memo's tools.*Computer access/);
    expect(recordedRuns(s.rec, 'agy')).toHaveLength(0);

    s.fx.prompter.answer('allow-once');
    const r = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('agy', { access: 'computer' }),
      model: '',
      conversationId: conv.id,
      userMessage: 'write stars',
      titles: false,
    });
    expect(r.stopReason).toBe('final');
    expect(r.answer).toBe('Done: wrote stars');
    expect(s.written).toEqual(['stars']);
    const [run] = recordedRuns(s.rec, 'agy');
    // Its MCP config went to a temporary HOME, never the real one, and is gone after the turn.
    expect(run.home).not.toBe(process.env.HOME);
    expect(run.home).not.toBe(s.home);
    expect(run.home.startsWith(fs.realpathSync(os.tmpdir())) || run.home.startsWith(os.tmpdir())).toBe(true);
    expect(run.endpoint.configFile).toBe(path.join(run.home, '.gemini', 'config', 'mcp_config.json'));
    expect(fs.existsSync(run.home)).toBe(false);
    // The HOME it was started from got nothing (no ~/.gemini written there), and the real one was never in play.
    expect(fs.readdirSync(s.home)).toEqual([]);
    expect(realGemini()).toEqual(realGeminiBefore);
    // Computer access is said in the turn's record, beside the gated call.
    expect(r.steps[0]).toMatchObject({
      tool: 'antigravity-cli:computer-access',
      summary: expect.stringMatching(/^Computer access: Antigravity CLI could use its own/),
    });
    const stored = await s.fx.kernel.conversations.info(conv.id);
    expect(stored.provider).toBe('antigravity-cli');
  });

  it("follows the turn's mode: in Vault only the MCP endpoint lists and runs the Vault-only tools alone, with Computer access every tool, and Web search only is refused before the CLI starts", async () => {
    s = setup({ FAKE_CLI_LIST: '1' });
    const conv = await s.fx.kernel.conversations.create();
    const turn = (mode: 'vault' | 'computer' | 'web') =>
      runChatTurn(s.fx.kernel, {
        provider: s.backends.provider('claude'),
        model: '',
        conversationId: conv.id,
        userMessage: 'call computer_only',
        titles: false,
        mode,
      });
    const vault = await turn('vault');
    expect(vault.stopReason).toBe('final');
    const [inVault] = recordedRuns(s.rec, 'claude');
    expect(inVault.argv[inVault.argv.indexOf('--tools') + 1]).toBe('');
    expect(inVault.listed).toEqual(expect.arrayContaining(['note_write', 'echo']));
    expect(inVault.listed).not.toContain('computer_only');
    expect(inVault.calls[0]).toMatchObject({ tool: 'computer_only', isError: true, text: expect.stringMatching(/UNKNOWN_TOOL/) });
    expect(s.fx.kernel.audit.tail({}).filter((a) => a.tool === 'computer_only')).toEqual([
      expect.objectContaining({ error: expect.objectContaining({ code: 'UNKNOWN_TOOL' }) }),
    ]);

    const computer = await turn('computer');
    expect(computer.answer).toBe('Done: ran');
    const inComputer = recordedRuns(s.rec, 'claude')[1];
    expect(inComputer.argv).not.toContain('--tools');
    expect(inComputer.listed).toContain('computer_only');
    expect(accessEvents(s.fx.dataDir).map((e) => e.access)).toEqual(['vault', 'computer']);

    const web = await turn('web');
    expect(web.stopReason).toBe('error');
    expect(web.error).toMatch(/^Web search only does not apply to Claude CLI/);
    expect(recordedRuns(s.rec, 'claude')).toHaveLength(2);
  });

  it('never starts the CLI for a conversation that is not stored: with no capability its endpoint could not be narrowed to the mode', async () => {
    s = setup({ FAKE_CLI_LIST: '1' });
    const r = await runCliTurn(s.fx.kernel, {
      provider: s.backends.provider('claude'),
      model: '',
      conversationId: 'not-stored',
      history: [],
      userMessage: 'call computer_only',
      mode: 'vault',
    });
    expect(r.stopReason).toBe('error');
    expect(r.error).toMatch(/^Claude CLI was not started: the conversation "not-stored" is not stored/);
    expect(recordedRuns(s.rec, 'claude')).toEqual([]);
    expect(s.fx.kernel.audit.tail({}).filter((a) => a.tool === 'computer_only')).toEqual([]);
  });

  it('claude with Computer access keeps its own tools (no --tools, edits accepted) and records the access with the turn; the effort is its thinking budget', async () => {
    s = setup();
    const conv = await s.fx.kernel.conversations.create();
    const r = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('claude', { access: 'computer' }),
      model: 'opus',
      conversationId: conv.id,
      userMessage: 'hello',
      titles: false,
      effort: 'high',
    });
    expect(r.answer).toBe('You said: hello');
    const [run] = recordedRuns(s.rec, 'claude');
    expect(run.argv).not.toContain('--tools');
    expect(run.argv).not.toContain('--disallowedTools');
    expect(run.argv[run.argv.indexOf('--permission-mode') + 1]).toBe('acceptEdits');
    expect(run.argv[run.argv.indexOf('--model') + 1]).toBe('opus');
    expect(run.env.thinking).toBe('31999');
    expect(r.steps).toEqual([expect.objectContaining({ tool: 'claude-cli:computer-access', args: { access: 'computer' } })]);
    // And on the audit trail, chained and verified like any line: the CLI, its version, the access.
    const events = accessEvents(s.fx.dataDir);
    expect(events).toEqual([
      expect.objectContaining({ event: 'agent-access', backend: 'claude', version: '2.1.3', access: 'computer', conversationId: conv.id }),
    ]);
    expect(verifyAuditFile(path.join(s.fx.dataDir, 'agent-audit.jsonl'))).toMatchObject({ ok: true, events: 1 });
  });

  it('names the conversation through the same CLI, in a run without Memo tools or its own, even when the turn had Computer access', async () => {
    s = setup();
    const conv = await s.fx.kernel.conversations.create();
    const r = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('claude', { access: 'computer' }),
      model: '',
      conversationId: conv.id,
      userMessage: 'hello there',
    });
    const title = await r.title;
    expect(title).toMatch(/^You said: /);
    expect((await s.fx.kernel.conversations.info(conv.id)).title).toBe(title);
    const [, titleRun] = recordedRuns(s.rec, 'claude');
    expect(titleRun.argv[titleRun.argv.indexOf('--tools') + 1]).toBe('');
    expect(titleRun.argv).not.toContain('--mcp-config');
    expect(titleRun.endpoint).toBeNull();
  });

  it('sends the earlier conversation with the new message, since the CLI starts fresh each turn', async () => {
    s = setup();
    const conv = await s.fx.kernel.conversations.create();
    const send = (text: string) =>
      runChatTurn(s.fx.kernel, { provider: s.backends.provider('claude'), model: '', conversationId: conv.id, userMessage: text, titles: false });
    await send('first thing');
    const r = await send('second thing');
    expect(r.answer).toBe('You said: second thing');
    const runs = recordedRuns(s.rec, 'claude');
    expect(runs[0].prompt).toBe('first thing');
    expect(runs[1].prompt).toContain('[User]\nfirst thing\n\n[Assistant]\nYou said: first thing');
    expect(runs[1].prompt.endsWith('second thing')).toBe(true);
  });

  it('a CLI that vanished after it was detected ends the turn with "Claude CLI failed to start", and works again once it is back', async () => {
    s = setup();
    expect(await s.backends.detector.detect('claude')).toMatchObject({ found: true, version: '2.1.3' });
    fs.rmSync(path.join(s.bin, 'claude'));
    const conv = await s.fx.kernel.conversations.create();
    const r = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('claude'),
      model: '',
      conversationId: conv.id,
      userMessage: 'hello',
      titles: false,
    });
    expect(r.stopReason).toBe('error');
    expect(r.error).toBe(`Claude CLI failed to start: ${path.join(s.bin, 'claude')} no longer exists`);
    // Not executable any more is a reason too.
    writeFakeClis(s.bin, ['claude']);
    fs.chmodSync(path.join(s.bin, 'claude'), 0o644);
    const r2 = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('claude'),
      model: '',
      conversationId: conv.id,
      userMessage: 'hello',
      titles: false,
    });
    expect(r2.error).toBe(`Claude CLI failed to start: ${path.join(s.bin, 'claude')} is not executable`);
    fs.chmodSync(path.join(s.bin, 'claude'), 0o755);
    const r3 = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('claude'),
      model: '',
      conversationId: conv.id,
      userMessage: 'hello',
      titles: false,
    });
    expect(r3.stopReason).toBe('final');
    // Every capability minted for those turns is gone.
    expect(s.fx.kernel.capabilities.size).toBe(0);
  });

  it("a CLI's own failure (not signed in) ends the turn with its message", async () => {
    s = setup({ FAKE_CLI_FAIL: '1' });
    const conv = await s.fx.kernel.conversations.create();
    const claude = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('claude'),
      model: '',
      conversationId: conv.id,
      userMessage: 'hi',
      titles: false,
    });
    expect(claude.stopReason).toBe('error');
    expect(claude.error).toBe('Claude CLI: Invalid API key · Please run /login');
    const codex = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('codex'),
      model: '',
      conversationId: conv.id,
      userMessage: 'hi',
      titles: false,
    });
    expect(codex.error).toBe('Codex CLI: unexpected status 401 Unauthorized');
    const agy = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('agy', { access: 'computer' }),
      model: '',
      conversationId: conv.id,
      userMessage: 'hi',
      titles: false,
    });
    expect(agy.error).toBe('Antigravity CLI exited with code 1: Not signed in');
  });

  it('stopping the turn ends a CLI that does not answer (SIGTERM, then SIGKILL), and its capability dies', async () => {
    s = setup({ FAKE_CLI_HANG: '1' });
    const conv = await s.fx.kernel.conversations.create();
    const stop = new AbortController();
    const turn = runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('codex'),
      model: '',
      conversationId: conv.id,
      userMessage: 'hi',
      titles: false,
      signal: stop.signal,
    });
    await waitFor(() => recordedRuns(s.rec, 'codex').length === 1, { what: () => 'the CLI to start' });
    expect(s.fx.kernel.capabilities.size).toBe(1);
    stop.abort();
    const r = await turn;
    expect(r.stopReason).toBe('cancelled');
    expect(r.error).toBe('The turn was stopped.');
    expect(fs.existsSync(path.join(s.rec, 'codex-sigterm'))).toBe(true);
    expect(s.fx.kernel.capabilities.size).toBe(0);
    // The person's message is kept; nothing was answered.
    expect((await s.fx.kernel.conversations.messages!(conv.id)).map((m) => m.role)).toEqual(['user']);
  }, 20_000);

  it('a CLI that answers, exits and leaves a process holding its stdout: the turn ends with its answer, and what it left in its process group is killed', async () => {
    s = setup({ FAKE_CLI_LEAVE: 'group' });
    const conv = await s.fx.kernel.conversations.create();
    try {
      const r = await runChatTurn(s.fx.kernel, {
        provider: s.backends.provider('claude'),
        model: '',
        conversationId: conv.id,
        userMessage: 'hello',
        titles: false,
      });
      expect(r.error).toBeUndefined();
      expect(r.stopReason).toBe('final');
      expect(r.answer).toBe('You said: hello');
      expect(s.fx.kernel.capabilities.size).toBe(0);
      expect(fs.existsSync(path.join(s.rec, 'claude-leftover.pid'))).toBe(true);
      await waitFor(() => runProcesses(s.rec).length === 0, { what: () => `the leftover process to be killed (live: ${runProcesses(s.rec).join(', ')})` });
    } finally {
      killLeftover(s.rec);
    }
  }, 20_000);

  it('Stop pressed after the CLI answered and exited, while what it left holds its stdout, keeps the answer (not "cancelled")', async () => {
    s = setup({ FAKE_CLI_LEAVE: 'group' });
    const conv = await s.fx.kernel.conversations.create();
    const stop = new AbortController();
    try {
      const turn = runChatTurn(s.fx.kernel, {
        provider: s.backends.provider('claude'),
        model: '',
        conversationId: conv.id,
        userMessage: 'hello',
        titles: false,
        signal: stop.signal,
      });
      const [run] = await waitFor(
        () => {
          const runs = recordedRuns(s.rec, 'claude');
          // The turn's capability dies when Memo sees the CLI exit.
          return runs.length === 1 && s.fx.kernel.capabilities.size === 0 ? runs : null;
        },
        { what: () => 'the CLI to exit' },
      );
      expect(run).toBeDefined();
      stop.abort();
      const r = await turn;
      expect(r.error).toBeUndefined();
      expect(r.stopReason).toBe('final');
      expect(r.answer).toBe('You said: hello');
      await waitFor(() => runProcesses(s.rec).length === 0, { what: () => `the leftover process to be killed (live: ${runProcesses(s.rec).join(', ')})` });
    } finally {
      killLeftover(s.rec);
    }
  }, 20_000);

  (containment.mode === 'namespace' ? it : it.skip)(
    "a process the CLI left in a session of its own, without the sweep's marker, still ends with the turn (the CLI is the init of its own PID namespace)",
    async () => {
      s = setup({ FAKE_CLI_LEAVE: 'escape' });
      const conv = await s.fx.kernel.conversations.create();
      s.fx.prompter.answer('allow-once', 'allow-once');
      try {
        const r = await runChatTurn(s.fx.kernel, {
          provider: s.backends.provider('codex'),
          model: '',
          conversationId: conv.id,
          userMessage: 'hello',
          titles: false,
        });
        expect(r.answer).toBe('You said: hello');
        expect(fs.existsSync(path.join(s.rec, 'codex-leftover.pid'))).toBe(true);
        await waitFor(() => runProcesses(s.rec).length === 0, { what: () => `the leftover to be killed (live: ${runProcesses(s.rec).join(', ')})` });
        expect(s.written).toEqual([]);
      } finally {
        killLeftover(s.rec);
      }
    },
    20_000,
  );

  it("the turn's capability dies as soon as the CLI exits: a process it left that escaped containment (judged only, sweep mode, no marker, own session) cannot write with it afterwards", async () => {
    // In the OS sandbox nothing escapes (the namespace ends with the CLI): escaping needs the judged-only
    // path a person can choose where bubblewrap is missing, with the sweep instead of a namespace.
    const saved = process.env.MEMO_PROCESS_CONTAINMENT;
    const savedBwrap = process.env.MEMO_BWRAP;
    process.env.MEMO_PROCESS_CONTAINMENT = 'sweep';
    process.env.MEMO_BWRAP = '/nonexistent/bwrap';
    s = setup({ FAKE_CLI_LEAVE: 'escape' }, { sandboxFallback: 'judged' });
    const conv = await s.fx.kernel.conversations.create();
    // Were the capability still live, the gate would let the leftover's write through.
    s.fx.prompter.answer('allow-once', 'allow-once');
    try {
      const r = await runChatTurn(s.fx.kernel, {
        provider: s.backends.provider('codex'),
        model: '',
        conversationId: conv.id,
        userMessage: 'hello',
        titles: false,
      });
      expect(r.stopReason).toBe('final');
      expect(r.answer).toBe('You said: hello');
      const file = path.join(s.rec, 'codex-leftover.json');
      await waitFor(() => fs.existsSync(file), { what: () => 'the leftover to try its write' });
      const attempt = JSON.parse(fs.readFileSync(file, 'utf8'));
      expect(attempt.isError).toBe(true);
      expect(attempt.text).toMatch(/^PERMISSION_DENIED: .*writes need a running Memo agent turn/);
      expect(s.written).toEqual([]);
      expect(s.fx.prompter.asked).toHaveLength(0);
    } finally {
      if (saved === undefined) delete process.env.MEMO_PROCESS_CONTAINMENT;
      else process.env.MEMO_PROCESS_CONTAINMENT = saved;
      if (savedBwrap === undefined) delete process.env.MEMO_BWRAP;
      else process.env.MEMO_BWRAP = savedBwrap;
      killLeftover(s.rec);
    }
  }, 20_000);

  it('stopping the turn kills the CLI and everything in its process group, even what holds its stdout', async () => {
    s = setup({ FAKE_CLI_HANG: '1', FAKE_CLI_LEAVE: 'group' });
    const conv = await s.fx.kernel.conversations.create();
    const stop = new AbortController();
    try {
      const turn = runChatTurn(s.fx.kernel, {
        provider: s.backends.provider('claude'),
        model: '',
        conversationId: conv.id,
        userMessage: 'hi',
        titles: false,
        signal: stop.signal,
      });
      await waitFor(() => fs.existsSync(path.join(s.rec, 'claude-leftover.pid')), { what: () => 'the CLI to start its child' });
      stop.abort();
      const r = await turn;
      expect(r.stopReason).toBe('cancelled');
      expect(r.error).toBe('The turn was stopped.');
      expect(s.fx.kernel.capabilities.size).toBe(0);
      await waitFor(() => runProcesses(s.rec).length === 0, { what: () => `the CLI and its child to be killed (live: ${runProcesses(s.rec).join(', ')})` });
    } finally {
      killLeftover(s.rec);
    }
  }, 20_000);

  it('agy gets its prompt in argv within a byte limit: a long conversation leaves out its oldest messages, and a message too long by itself is refused before agy is started', async () => {
    s = setup();
    const conv = await s.fx.kernel.conversations.create();
    const limit = BACKENDS.agy.argvPromptBytes!;
    const send = (text: string) =>
      runChatTurn(s.fx.kernel, {
        provider: s.backends.provider('agy', { access: 'computer' }),
        model: '',
        conversationId: conv.id,
        userMessage: text,
        titles: false,
      });
    // Three messages of 40,000 bytes each (two-byte characters): with the answers, far over 128 KiB.
    const messages = ['a', 'b', 'c'].map((tag) => `${tag}${'é'.repeat(20_000)}`);
    for (const m of messages) {
      const r = await send(m);
      expect(r.error).toBeUndefined();
      expect(r.stopReason).toBe('final');
      expect(r.answer).toBe(`You said: ${m}`);
    }
    const runs = recordedRuns(s.rec, 'agy');
    expect(runs).toHaveLength(3);
    for (const run of runs) expect(Buffer.byteLength(run.argv[run.argv.indexOf('-p') + 1], 'utf8')).toBeLessThanOrEqual(limit);
    // The last prompt kept the newest earlier message and left out the oldest.
    const last = runs[2].argv[runs[2].argv.indexOf('-p') + 1] as string;
    expect(last.endsWith(messages[2]!)).toBe(true);
    expect(last).toContain(`[Assistant]\nYou said: ${messages[1]}`);
    expect(last).not.toContain(messages[0]);

    // A message over the limit by itself: a clear error, and agy is not started.
    const tooLong = 'é'.repeat(limit / 2 + 1);
    const refused = await send(tooLong);
    expect(refused.stopReason).toBe('error');
    expect(refused.error).toBe(
      `Antigravity CLI takes the prompt as a command-line argument, limited here to ${limit} bytes (Linux refuses a single argument over 128 KiB): this message is ${limit + 2} bytes. Shorten it, or use the claude or codex backend, which read the prompt on stdin.`,
    );
    expect(recordedRuns(s.rec, 'agy')).toHaveLength(3);
    expect(s.fx.kernel.capabilities.size).toBe(0);
    // The message is kept in the conversation, as any refused turn's is.
    expect((await s.fx.kernel.conversations.messages!(conv.id)).at(-1)).toMatchObject({ role: 'user', content: tooLong });
  }, 30_000);

  it("uses an MCP endpoint of the same kernel that is already running (memo serve's) instead of starting one", async () => {
    s = setup();
    const { McpHttpEndpoint } = await import('../../../kernel/mcp/index.js');
    const served = new McpHttpEndpoint(s.fx.kernel);
    const url = await served.start();
    const backends = new CliBackends(s.fx.kernel, { env: s.backends.env, detector: s.backends.detector, endpoint: () => ({ url, token: served.token }) });
    const conv = await s.fx.kernel.conversations.create();
    s.fx.prompter.answer('allow-once');
    const r = await runChatTurn(s.fx.kernel, {
      provider: backends.provider('claude'),
      model: '',
      conversationId: conv.id,
      userMessage: 'write served',
      titles: false,
    });
    expect(r.answer).toBe('Done: wrote served');
    const [run] = recordedRuns(s.rec, 'claude');
    expect(run.endpoint.url).toBe(url);
    expect(run.endpoint.headers.Authorization).toBe(`Bearer ${served.token}`);
  });

  it("never puts the endpoint token or the turn's capability into an error, even when the CLI echoes them", async () => {
    s = setup({ FAKE_CLI_FAIL: '1', FAKE_CLI_ECHO: '1' });
    const conv = await s.fx.kernel.conversations.create();
    const r = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('agy', { access: 'computer' }),
      model: '',
      conversationId: conv.id,
      userMessage: 'hi',
      titles: false,
    });
    const [run] = recordedRuns(s.rec, 'agy');
    const token = (run.endpoint.headers.Authorization as string).slice('Bearer '.length);
    const capability = run.endpoint.headers['X-Memo-Write-Capability'] as string;
    expect(r.error).toContain('rejected headers {"Authorization":"Bearer [masked]","X-Memo-Write-Capability":"[masked]"}');
    expect(r.error).not.toContain(token);
    expect(r.error).not.toContain(capability);
  });
});

describe('CLI detection', () => {
  let s: Setup;
  afterEach(async () => s?.fx.close());

  it('finds each CLI with its version, reuses a success for five minutes, then checks again', async () => {
    s = setup();
    const all = await s.backends.detector.detectAll();
    expect(all.map((d) => [d.backend, d.found, d.found ? d.version : null])).toEqual([
      ['claude', true, '2.1.3'],
      ['codex', true, '0.58.0'],
      ['agy', true, '1.2.7'],
    ]);
    expect(await s.backends.detector.detect('claude')).toMatchObject({ found: true, cached: true });
    expect(versionChecks(s.rec, 'claude')).toBe(1);
    s.now.t += DETECTION_TTL_MS;
    expect(await s.backends.detector.detect('claude')).toMatchObject({ found: true, cached: false });
    expect(versionChecks(s.rec, 'claude')).toBe(2);
  });

  it('refuses versions below the floor (claude 2.1.0, agy 1.2.7) and never caches a failure', async () => {
    s = setup({ FAKE_CLAUDE_VERSION: '2.0.9', FAKE_AGY_VERSION: '1.2.6' });
    const claude = await s.backends.detector.detect('claude');
    expect(claude).toMatchObject({ found: false, version: '2.0.9', reason: 'version 2.0.9 is older than 2.1.0: upgrade claude' });
    expect(await s.backends.detector.detect('agy')).toMatchObject({ found: false, reason: 'version 1.2.6 is older than 1.2.7: upgrade agy' });
    await s.backends.detector.detect('claude');
    expect(versionChecks(s.rec, 'claude')).toBe(2);
    // 2.1.10 is newer than 2.1.9, not older (numeric, not text, comparison).
    const env = { ...s.backends.env, FAKE_CLAUDE_VERSION: '2.1.10' };
    expect(await new CliDetector({ env, loginShell: false }).detect('claude')).toMatchObject({ found: true, version: '2.1.10' });
  });

  it('says a CLI is not on PATH, and finds it as soon as it is installed', async () => {
    s = setup();
    fs.rmSync(path.join(s.bin, 'codex'));
    expect(await s.backends.detector.detect('codex')).toMatchObject({ found: false, reason: expect.stringMatching(/^`codex` is not on PATH/) });
    writeFakeClis(s.bin, ['codex']);
    expect(await s.backends.detector.detect('codex')).toMatchObject({ found: true, version: '0.58.0' });
  });
});

describe('an agent CLI turn in the OS sandbox', () => {
  let s: Setup;
  let server: http.Server;
  let port = 0;
  let hits = 0;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits++;
      res.end('local-service-secret');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => new Promise<void>((r) => server.close(() => r())));
  afterEach(async () => s?.fx.close());

  /** A kernel with the data folder inside the root (the default layout), and a claude turn whose own shell runs `sh`. */
  async function computerTurn(sh: string, access: 'computer' | 'vault' = 'computer') {
    const root = tempDir('memo-cli-root-');
    s = setup({ FAKE_CLI_SH: sh }, { root, dataDir: path.join(root, 'data') });
    // The audit key exists once a call is recorded.
    await s.fx.kernel.invoke({ tool: 'echo', args: { text: 'x' }, caller: { kind: 'agent' } });
    const conv = await s.fx.kernel.conversations.create();
    s.fx.prompter.setFallback('allow-once');
    const r = await runChatTurn(s.fx.kernel, {
      provider: s.backends.provider('claude', { access }),
      model: '',
      conversationId: conv.id,
      userMessage: 'echo through-the-bridge',
      titles: false,
    });
    const run = recordedRuns(s.rec, 'claude').at(-1);
    return { r, run, root, key: fs.readFileSync(path.join(root, 'data', 'audit.key'), 'utf8').trim() };
  }

  it("with Computer access: its own shell writes in the root and reaches Memo's MCP endpoint, but not the data folder, memo's settings, or another loopback service", async () => {
    const bin = path.resolve('bin/memo');
    const { r, run, root, key } = await computerTurn(
      [
        'cat data/audit.key',
        'cat "$PWD/data/audit.key"',
        `node ${bin} --data "$PWD/data" permissions always-allow on`,
        `curl -sS --max-time 5 http://127.0.0.1:${port}/`,
        `curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:${port}/`,
        'curl -fsS --max-time 5 https://example.org/ >/dev/null; echo "other-domain=$?"',
        'echo written > from-the-cli.txt',
        'echo done',
      ].join('; '),
    );
    expect(r.answer).toBe('Done: through-the-bridge');
    const out = `${run.sh.stdout}\n${run.sh.stderr}`;
    expect(out).toContain('done');
    expect(out).not.toContain(key);
    expect(out).not.toContain('local-service-secret');
    expect(out).toMatch(/other-domain=[1-9]/);
    expect(hits).toBe(0);
    expect(s.fx.kernel.permissions.alwaysAllow).toBe(false);
    expect(fs.readFileSync(path.join(root, 'from-the-cli.txt'), 'utf8')).toBe('written\n');
  });

  it('in Vault only: the root is read-only to it', async () => {
    const { run, root } = await computerTurn('echo x > in-vault.txt; echo "status=$?"', 'vault');
    expect(run.sh.stdout).toMatch(/status=[1-9]/);
    expect(fs.existsSync(path.join(root, 'in-vault.txt'))).toBe(false);
  });
});
