import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Fake `claude`, `codex` and `agy` executables (small node scripts) for tests: a CLI we cannot
 * install is the edge of the world. Each speaks its CLI's real stream format (shapes recorded from
 * Claude Code's stream-json, Codex's exec_events.rs, agy's plain print mode), finds Memo's MCP
 * endpoint where the real CLI would (Claude's --mcp-config file, Codex's -c overrides and the
 * environment variables they name, agy's $HOME/.gemini/config/mcp_config.json), and really calls it
 * over HTTP. Every run is recorded to $FAKE_CLI_RECORD/<cli>-<n>.json: argv, HOME, the endpoint,
 * the token and capability it was handed, and what each MCP call answered.
 *
 * The prompt decides what it does: `write <text>` calls note_write, `echo <text>` calls echo; anything
 * else is answered directly. `FAKE_CLI_SH` is run by /bin/sh as its own shell tool would run a command,
 * output recorded as `sh`. `FAKE_CLI_FAIL=1` makes it fail like the CLI reporting an error;
 * `FAKE_CLI_HANG=1` makes it never answer and ignore SIGTERM; `FAKE_CLI_LEAVE` makes it leave a
 * process running that holds its stdout (see `leave` below).
 */
const SCRIPT = String.raw`
const fs = require('node:fs');
const path = require('node:path');
const KIND = process.env.__KIND__;
const recordDir = process.env.FAKE_CLI_RECORD;
const argv = process.argv.slice(2);

function record(name, data) {
  if (!recordDir) return;
  let n = 0;
  while (fs.existsSync(path.join(recordDir, name + '-' + n + '.json'))) n++;
  // Written whole, then renamed into place: a test polling for it never reads half a file.
  const file = path.join(recordDir, name + '-' + n + '.json');
  fs.writeFileSync(file + '.tmp', JSON.stringify(data, null, 2));
  fs.renameSync(file + '.tmp', file);
}

if (argv[0] === '--version') {
  if (recordDir) fs.appendFileSync(path.join(recordDir, KIND + '-version.log'), 'x');
  const v = process.env['FAKE_' + KIND.toUpperCase() + '_VERSION'] || { claude: '2.1.3', codex: '0.58.0', agy: '1.2.7' }[KIND];
  process.stdout.write({ claude: v + ' (Claude Code)', codex: 'codex-cli ' + v, agy: 'agy ' + v }[KIND] + '\n');
  process.exit(0);
}

function readStdin() {
  return new Promise((resolve) => {
    let s = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d) => (s += d)).on('end', () => resolve(s));
  });
}

/** Where the real CLI would find its MCP server. */
function endpoint() {
  if (KIND === 'claude') {
    const i = argv.indexOf('--mcp-config');
    if (i < 0) return null;
    const cfg = JSON.parse(fs.readFileSync(argv[i + 1], 'utf8')).mcpServers.memo;
    return { url: cfg.url, headers: cfg.headers, configFile: argv[i + 1] };
  }
  if (KIND === 'codex') {
    const over = {};
    for (let i = 0; i < argv.length; i++) if (argv[i] === '-c') { const [k, ...v] = argv[i + 1].split('='); over[k] = v.join('='); }
    if (!over['mcp_servers.memo.url']) return null;
    const headers = { Authorization: 'Bearer ' + process.env[JSON.parse(over['mcp_servers.memo.bearer_token_env_var'])] };
    const extra = over['mcp_servers.memo.env_http_headers'];
    if (extra) {
      const m = /"([^"]+)"\s*=\s*"([^"]+)"/.exec(extra);
      headers[m[1]] = process.env[m[2]];
    }
    return { url: JSON.parse(over['mcp_servers.memo.url']), headers };
  }
  const file = path.join(process.env.HOME, '.gemini', 'config', 'mcp_config.json');
  if (!fs.existsSync(file)) return null;
  const cfg = JSON.parse(fs.readFileSync(file, 'utf8')).mcpServers.memo;
  return { url: cfg.serverUrl, headers: cfg.headers, configFile: file };
}

async function rpc(ep, session, body) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', ...ep.headers };
  if (session) headers['mcp-session-id'] = session;
  const res = await fetch(ep.url, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  let msg = null;
  if ((res.headers.get('content-type') || '').includes('text/event-stream')) {
    for (const line of text.split('\n')) if (line.startsWith('data: ')) { const m = JSON.parse(line.slice(6)); if (m.id === body.id) msg = m; }
  } else if (text) msg = JSON.parse(text);
  return { status: res.status, session: res.headers.get('mcp-session-id'), msg };
}

async function callTool(ep, name, args) {
  const init = await rpc(ep, null, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fake-' + KIND, version: '1.0.0' } } });
  if (init.status !== 200) return { isError: true, text: 'HTTP ' + init.status };
  await rpc(ep, init.session, { jsonrpc: '2.0', method: 'notifications/initialized' });
  const r = await rpc(ep, init.session, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } });
  const result = r.msg && r.msg.result;
  if (!result) return { isError: true, text: JSON.stringify(r.msg && r.msg.error) };
  return { isError: result.isError === true, text: result.content.map((c) => c.text).join('\n') };
}

// FAKE_CLI_LIST: the CLI lists the tools its MCP server offers (recorded as rec.listed).
async function listTools(ep) {
  const init = await rpc(ep, null, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fake-' + KIND, version: '1.0.0' } } });
  await rpc(ep, init.session, { jsonrpc: '2.0', method: 'notifications/initialized' });
  const r = await rpc(ep, init.session, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
  return r.msg && r.msg.result ? r.msg.result.tools.map((t) => t.name) : null;
}

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

/**
 * What a CLI may leave running, holding its stdout: FAKE_CLI_LEAVE=group, a child in the CLI's process
 * group that never ends (a hook, a background shell); FAKE_CLI_LEAVE=escape, one in a session of its
 * own (out of the group's reach) and without the sweep's MEMO_RUN_ID marker, that, once the CLI has
 * exited, tries a write with the turn's capability and records what it got in <cli>-leftover.json.
 * Either writes its pid to <cli>-leftover.pid.
 */
function leave(ep) {
  const { spawn } = require('node:child_process');
  const mode = process.env.FAKE_CLI_LEAVE;
  const env = { ...process.env, FAKE_LEFTOVER: mode, LEFT_BY: String(process.pid), LEFT_EP: JSON.stringify(ep) };
  if (mode === 'escape') delete env.MEMO_RUN_ID;
  const c = spawn(process.execPath, [process.argv[1]], { stdio: ['ignore', 'inherit', 'ignore'], detached: mode === 'escape', env });
  c.unref();
  fs.writeFileSync(path.join(recordDir, KIND + '-leftover.pid.tmp'), String(c.pid));
  fs.renameSync(path.join(recordDir, KIND + '-leftover.pid.tmp'), path.join(recordDir, KIND + '-leftover.pid'));
}

async function leftover() {
  if (process.env.FAKE_LEFTOVER === 'group') {
    setInterval(() => undefined, 1000);
    return;
  }
  const parent = Number(process.env.LEFT_BY);
  const alive = () => {
    try {
      process.kill(parent, 0);
      return true;
    } catch {
      return false;
    }
  };
  while (alive()) await new Promise((r) => setTimeout(r, 20));
  const r = await callTool(JSON.parse(process.env.LEFT_EP), 'note_write', { line: 'after exit' });
  const file = path.join(recordDir, KIND + '-leftover.json');
  fs.writeFileSync(file + '.tmp', JSON.stringify(r));
  fs.renameSync(file + '.tmp', file);
}

(async () => {
  if (process.env.FAKE_LEFTOVER) return leftover();
  const prompt = KIND === 'agy' ? argv[argv.indexOf('-p') + 1] : await readStdin();
  const ep = endpoint();
  const rec = { pid: process.pid, argv, cwd: process.cwd(), home: process.env.HOME, prompt, endpoint: ep, env: { token: process.env.MEMO_MCP_TOKEN || null, capability: process.env.MEMO_MCP_WRITE_CAPABILITY || null, inheritedCapability: process.env.MEMO_WRITE_CAPABILITY || null, thinking: process.env.MAX_THINKING_TOKENS || null }, calls: [] };
  if (ep && ep.configFile) rec.configMode = (fs.statSync(ep.configFile).mode & 0o777).toString(8);
  // The new message comes last (after a system prompt or the earlier conversation, when there are).
  const last = prompt.trim().split('\n').pop().trim();
  if (process.env.FAKE_CLI_LIST && ep) rec.listed = await listTools(ep);
  const m = /^(write|echo|call) (.+)$/.exec(last);
  let answer = 'You said: ' + last;
  const steps = [];
  if (m && ep) {
    const tool = m[1] === 'write' ? 'note_write' : m[1] === 'call' ? m[2] : 'echo';
    const args = m[1] === 'write' ? { line: m[2] } : m[1] === 'call' ? {} : { text: m[2] };
    const r = await callTool(ep, tool, args);
    rec.calls.push({ tool, args, ...r });
    steps.push({ tool, args, r });
    answer = r.isError ? 'The tool failed: ' + r.text : 'Done: ' + r.text;
  }
  // FAKE_CLI_SH: the CLI's own shell tool (Computer access) runs this, as the real one would run what its model chose.
  if (process.env.FAKE_CLI_SH) {
    const r = require('node:child_process').spawnSync('/bin/sh', ['-c', process.env.FAKE_CLI_SH], { encoding: 'utf8', timeout: 30000 });
    rec.sh = { stdout: r.stdout, stderr: r.stderr, status: r.status };
  }
  // FAKE_CLI_HANG: a CLI that never answers and ignores SIGTERM (stopping the turn must still end it).
  // Its handler is in place before the run is recorded: the test stops the turn once it sees the record.
  if (process.env.FAKE_CLI_HANG) process.on('SIGTERM', () => fs.writeFileSync(path.join(recordDir, KIND + '-sigterm'), 'x'));
  record(KIND, rec);
  if (process.env.FAKE_CLI_LEAVE) leave(ep);
  if (process.env.FAKE_CLI_HANG) {
    setInterval(() => undefined, 1000);
    return;
  }
  if (process.env.FAKE_CLI_FAIL) {
    if (KIND === 'claude') out({ type: 'result', subtype: 'error_during_execution', is_error: true, result: 'Invalid API key · Please run /login', session_id: 's1' });
    else if (KIND === 'codex') out({ type: 'turn.failed', error: { message: 'unexpected status 401 Unauthorized' } });
    else {
      // FAKE_CLI_ECHO: a CLI that echoes the headers it was configured with in its error.
      if (process.env.FAKE_CLI_ECHO && ep) process.stderr.write('rejected headers ' + JSON.stringify(ep.headers) + '\n');
      process.stderr.write('Not signed in\n');
    }
    process.exit(1);
  }
  if (KIND === 'claude') {
    out({ type: 'system', subtype: 'init', cwd: process.cwd(), session_id: 's1', tools: ['mcp__memo__note_write'], mcp_servers: [{ name: 'memo', status: ep ? 'connected' : 'failed' }], model: 'claude-sonnet-4-5-20250929', permissionMode: 'default', apiKeySource: 'none' });
    for (const [i, s] of steps.entries()) {
      const id = 'toolu_0' + i;
      out({ type: 'assistant', message: { id: 'msg_' + i, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'thinking', thinking: 'I should call ' + s.tool + '.', signature: 'x' }, { type: 'tool_use', id, name: 'mcp__memo__' + s.tool, input: s.args }], stop_reason: 'tool_use', usage: { input_tokens: 10, output_tokens: 5 } }, parent_tool_use_id: null, session_id: 's1' });
      out({ type: 'user', message: { role: 'user', content: [{ tool_use_id: id, type: 'tool_result', content: [{ type: 'text', text: s.r.text }], is_error: s.r.isError }] }, parent_tool_use_id: null, session_id: 's1' });
    }
    out({ type: 'stream_event', event: { type: 'message_start', message: { id: 'msg_f', type: 'message', role: 'assistant', content: [], model: 'claude-sonnet-4-5-20250929' } }, session_id: 's1', parent_tool_use_id: null });
    out({ type: 'stream_event', event: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, session_id: 's1', parent_tool_use_id: null });
    const half = Math.ceil(answer.length / 2);
    for (const piece of [answer.slice(0, half), answer.slice(half)]) out({ type: 'stream_event', event: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }, session_id: 's1', parent_tool_use_id: null });
    out({ type: 'stream_event', event: { type: 'content_block_stop', index: 0 }, session_id: 's1', parent_tool_use_id: null });
    out({ type: 'assistant', message: { id: 'msg_f', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: answer }], stop_reason: 'end_turn', usage: { input_tokens: 12, output_tokens: 7 } }, parent_tool_use_id: null, session_id: 's1' });
    out({ type: 'result', subtype: 'success', is_error: false, duration_ms: 10, num_turns: 1 + steps.length, result: answer, session_id: 's1', total_cost_usd: 0.001, usage: { input_tokens: 22, output_tokens: 12 } });
  } else if (KIND === 'codex') {
    out({ type: 'thread.started', thread_id: 'th_1' });
    out({ type: 'turn.started' });
    for (const [i, s] of steps.entries()) {
      const item = { id: 'item_' + i, type: 'mcp_tool_call', server: 'memo', tool: s.tool, arguments: s.args, result: null, error: null, status: 'in_progress' };
      out({ type: 'item.started', item });
      out({ type: 'item.completed', item: { ...item, result: { content: [{ type: 'text', text: s.r.text }], structured_content: null }, status: s.r.isError ? 'failed' : 'completed', ...(s.r.isError ? { error: { message: s.r.text } } : {}) } });
    }
    out({ type: 'item.completed', item: { id: 'item_r', type: 'reasoning', text: '**Answering**' } });
    out({ type: 'item.completed', item: { id: 'item_m', type: 'agent_message', text: answer } });
    out({ type: 'turn.completed', usage: { input_tokens: 30, cached_input_tokens: 0, output_tokens: 9 } });
  } else {
    process.stdout.write(answer + '\n');
  }
})().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + '\n');
  process.exit(3);
});
`;

/** Writes fake executables for the given CLIs into `dir` (put it first on PATH). */
export function writeFakeClis(dir: string, kinds: ReadonlyArray<'claude' | 'codex' | 'agy'> = ['claude', 'codex', 'agy']): void {
  fs.mkdirSync(dir, { recursive: true });
  for (const kind of kinds) {
    const file = path.join(dir, kind);
    fs.writeFileSync(file, `#!${process.execPath}\nprocess.env.__KIND__ = ${JSON.stringify(kind)};\n${SCRIPT}`, { mode: 0o755 });
  }
}

/** The runs a fake CLI recorded, oldest first. */
export function recordedRuns(recordDir: string, kind: string): any[] {
  const runs: any[] = [];
  for (let n = 0; fs.existsSync(path.join(recordDir, `${kind}-${n}.json`)); n++)
    runs.push(JSON.parse(fs.readFileSync(path.join(recordDir, `${kind}-${n}.json`), 'utf8')));
  return runs;
}

/**
 * Host pids of the live processes of a fake CLI's runs: their environment names the run's record
 * folder. The CLI may be the init of a PID namespace of its own, where the pids it sees are not the
 * host's, so they are found by their environment. A zombie counts as ended (its environment is gone).
 * `leftover`: only what the CLI left running (FAKE_CLI_LEAVE). Not this process, nor those in `except`.
 */
export function runProcesses(rec: string, only?: 'leftover', except: number[] = []): number[] {
  const marker = Buffer.from(`FAKE_CLI_RECORD=${rec}\0`);
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid || except.includes(pid)) continue;
    let environ: Buffer;
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`);
    } catch {
      continue; // gone, or not ours
    }
    if (environ.includes(marker) && (only !== 'leftover' || environ.includes('FAKE_LEFTOVER='))) found.push(pid);
  }
  return found;
}

/** How many times `<kind> --version` ran. */
export function versionChecks(recordDir: string, kind: string): number {
  const f = path.join(recordDir, `${kind}-version.log`);
  return fs.existsSync(f) ? fs.readFileSync(f, 'utf8').length : 0;
}

/** One MCP tool call from outside (a 2025-11-25 session over HTTP), as a replaying attacker would make it. */
export async function mcpCall(
  url: string,
  headers: Record<string, string>,
  name: string,
  args: Record<string, unknown>,
): Promise<{ isError: boolean; text: string }> {
  const post = async (session: string | null, body: Record<string, unknown>) => {
    const h: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...headers,
    };
    if (session) h['mcp-session-id'] = session;
    const res = await fetch(url, { method: 'POST', headers: h, body: JSON.stringify(body) });
    const text = await res.text();
    let msg: any = null;
    if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      for (const line of text.split('\n'))
        if (line.startsWith('data: ')) {
          const m = JSON.parse(line.slice(6));
          if (m.id === body.id) msg = m;
        }
    } else if (text) msg = JSON.parse(text);
    return { status: res.status, session: res.headers.get('mcp-session-id'), msg };
  };
  const init = await post(null, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'replay', version: '1.0.0' } },
  });
  if (init.status !== 200) return { isError: true, text: `HTTP ${init.status}` };
  await post(init.session, { jsonrpc: '2.0', method: 'notifications/initialized' });
  const r = await post(init.session, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } });
  const result = r.msg?.result;
  if (!result) return { isError: true, text: JSON.stringify(r.msg?.error) };
  return { isError: result.isError === true, text: (result.content as Array<{ text: string }>).map((c) => c.text).join('\n') };
}
