import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { parse as parseYaml } from 'yaml';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { clientTokenLookup, tokenDigest } from '../../kernel/mcp/client-tokens.js';
import { McpHttpEndpoint } from '../../kernel/mcp/mcp-http-server.js';
import { McpStdioServer } from '../../kernel/mcp/mcp-stdio.js';
import { MemoryLogger } from '../../kernel/logger.js';
import { echoPack, makeKernel, tempDir, type Fixture } from '../helpers/kernel-fixture.js';
import { connect, deferred, eventually, raw } from './mcp-helpers.js';
import type { ToolContext } from '../../kernel/tools/contract.js';

/** One JSON-RPC POST to the endpoint, with the token and the headers a client of the revision sends. */
function rpc(
  url: string,
  token: string,
  message: { jsonrpc: string; id?: number; method: string; params?: Record<string, unknown> },
  headers: Record<string, string> = {},
) {
  // The stateless revision routes on headers that repeat the body: the method, and a tool call's name.
  const name = message.method === 'tools/call' && typeof message.params?.name === 'string' ? { 'Mcp-Name': message.params.name } : {};
  return raw(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${token}`,
      'Mcp-Method': message.method,
      ...name,
      ...headers,
    },
    body: JSON.stringify(message),
  });
}

const MODERN = '2026-07-28';

function writeSkill(dir: string, name: string, description: string, body: string, files: Record<string, string> = {}): void {
  const at = path.join(dir, name);
  fs.mkdirSync(at, { recursive: true });
  fs.writeFileSync(path.join(at, 'SKILL.md'), `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`);
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(at, file)), { recursive: true });
    fs.writeFileSync(path.join(at, file), text);
  }
}

/** The SDK v2 client pinned to the stateless revision: no initialize, no session, `_meta` on every request. */
async function modernClient(url: string, token: string, name = 'modern-client') {
  const client = new ClientV2({ name, version: '2.4.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  const transport = new HttpV2(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return { client, transport, close: () => client.close().catch(() => {}) };
}

/** One JSON-RPC request of the stateless revision, sent by hand. */
function envelope(clientName = 'raw-client', version = '0.0.1'): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: clientName, version },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
}

let nextId = 1;

/** A request of the stateless revision sent by hand: the envelope in `_meta`, the revision's headers. */
async function stateless(ep: McpHttpEndpoint, method: string, params: Record<string, unknown> = {}, who = 'raw-client', version = '0.0.1') {
  const r = await rpc(
    ep.url,
    ep.token,
    { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: envelope(who, version) } },
    { 'MCP-Protocol-Version': MODERN },
  );
  return { status: r.status, body: JSON.parse(r.body) as { result?: any; error?: { code: number; message: string; data?: unknown } } };
}

describe('MCP: both protocol revisions on one endpoint, skills over MCP', () => {
  let fx: Fixture;
  let endpoint: McpHttpEndpoint;
  let skillsDir: string;
  const logger = new MemoryLogger();

  beforeEach(async () => {
    skillsDir = tempDir('memo-skills-');
    writeSkill(skillsDir, 'release-notes', 'Writes release notes from the git log.', '# Release notes\nRead references/STYLE.md first.', {
      'references/STYLE.md': 'Short lines. Past tense.\n',
    });
    fx = makeKernel({ packs: [echoPack()] });
    await fx.kernel.loadSkills([{ dir: skillsDir, source: 'extra' }]);
    endpoint = new McpHttpEndpoint(fx.kernel, { logger });
    await endpoint.start();
  });

  afterEach(async () => {
    await endpoint.close();
    await fx.close();
  });

  it('answers server/discover for the stateless revision (no initialize first), naming tools, prompts and the skills extension', async () => {
    const r = await stateless(endpoint, 'server/discover');
    expect(r.status).toBe(200);
    const result = r.body.result;
    expect(result.supportedVersions).toContain(MODERN);
    expect(result.capabilities.tools).toBeDefined();
    expect(result.capabilities.prompts).toBeDefined();
    expect(Object.keys(result.capabilities.extensions ?? {})).toContain('io.modelcontextprotocol/skills');
    expect(result.serverInfo?.name ?? result._meta?.['io.modelcontextprotocol/serverInfo']?.name).toBe('memo');
    expect(endpoint.sessionCount).toBe(0);
  });

  it('lets an SDK v2 client on the stateless revision list and call tools through the pipeline, audited under its declared name@version', async () => {
    const m = await modernClient(endpoint.url, endpoint.token);
    try {
      const { tools } = await m.client.listTools();
      expect(tools.map((t) => t.name)).toContain('echo_safe');
      const r = await m.client.callTool({ name: 'echo_safe', arguments: { text: 'stateless' } });
      expect(r.isError).toBeFalsy();
      expect(JSON.stringify(r.content)).toContain('stateless');
      expect(endpoint.sessionCount).toBe(0);
      const last = fx.kernel.audit.tail().at(-1)!;
      expect(last.tool).toBe('echo_safe');
      expect(last.caller).toMatchObject({ kind: 'mcp', id: 'modern-client@2.4.0' });
    } finally {
      await m.close();
    }
  });

  it('serves a 2025-11-25 client (SDK v1, initialize + session) beside it on the same URL', async () => {
    const old = await connect(endpoint.url, endpoint.token, { name: 'old-client' });
    const m = await modernClient(endpoint.url, endpoint.token);
    try {
      expect(old.transport.sessionId).toBeDefined();
      const [a, b] = await Promise.all([
        old.client.callTool({ name: 'echo_safe', arguments: { text: 'old' } }),
        m.client.callTool({ name: 'echo_safe', arguments: { text: 'new' } }),
      ]);
      expect(JSON.stringify(a.content)).toContain('old');
      expect(JSON.stringify(b.content)).toContain('new');
      expect(endpoint.sessionCount).toBe(1);
    } finally {
      await m.close();
      await old.close();
    }
  });

  it("forwards progress to a stateless client and passes its cancellation on as the call's abort signal", async () => {
    const aborted = deferred<string>();
    const started = deferred();
    fx.kernel.registerPack({
      id: 'long',
      tools: [
        {
          spec: { name: 'count_up', description: 'counts', parameters: { type: 'object' }, danger: 'safe', effect: 'read' },
          impl: async (_a: Record<string, unknown>, ctx: ToolContext) => {
            for (let i = 1; i <= 3; i++) {
              ctx.progress({ progress: i, total: 3, message: `step ${i}` });
              await new Promise((r) => setImmediate(r));
            }
            return { counted: 3 };
          },
        },
        {
          spec: { name: 'wait_abort', description: 'waits', parameters: { type: 'object' }, danger: 'safe', effect: 'read' },
          impl: (_a: Record<string, unknown>, ctx: ToolContext) =>
            new Promise((resolve) => {
              started.resolve();
              ctx.signal.addEventListener('abort', () => {
                aborted.resolve('aborted');
                resolve('stopped');
              });
            }),
        },
      ],
    });
    const m = await modernClient(endpoint.url, endpoint.token);
    try {
      const seen: Array<{ progress: number; total?: number | undefined; message?: string | undefined }> = [];
      const r = await m.client.callTool({ name: 'count_up', arguments: {} }, { onprogress: (p) => void seen.push(p) });
      expect(r.isError).toBeFalsy();
      expect(seen).toEqual([1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}` })));
      const stop = new AbortController();
      const pending = m.client.callTool({ name: 'wait_abort', arguments: {} }, { signal: stop.signal });
      await started.promise;
      stop.abort();
      await expect(pending).rejects.toThrow();
      expect(await aborted.promise).toBe('aborted');
    } finally {
      await m.close();
    }
  });

  it('tells a stateless client listening on subscriptions/listen that the tool list changed', async () => {
    const lists: string[][] = [];
    const client = new ClientV2(
      { name: 'listener', version: '1' },
      {
        versionNegotiation: { mode: { pin: MODERN } },
        listChanged: { tools: { debounceMs: 0, onChanged: (err, tools) => void (!err && tools && lists.push(tools.map((t) => t.name))) } },
      },
    );
    await client.connect(new HttpV2(new URL(endpoint.url), { requestInit: { headers: { Authorization: `Bearer ${endpoint.token}` } } }));
    try {
      // The listen stream is open once a change published now reaches the client; keep publishing until one does.
      let n = 0;
      await eventually(() => {
        const pack = fx.kernel.registerPack({
          id: `late-${++n}`,
          tools: [{ spec: { name: `late_${n}`, description: 'late', parameters: { type: 'object' }, danger: 'safe', effect: 'read' }, impl: () => 'late' }],
        });
        void pack;
        return lists.some((l) => l.some((t) => t.startsWith('late_')));
      }, 'a tools/list_changed on the listen stream');
    } finally {
      await client.close().catch(() => {});
    }
  });

  it('answers a malformed stateless tools/call with -32602 and one line, and never reaches the kernel', async () => {
    const { body } = await stateless(endpoint, 'tools/call', { arguments: {} });
    expect(body.error!.code).toBe(-32602);
    expect(body.error!.message).toMatch(/name/);
    expect(body.error!.message.length).toBeLessThan(200);
    expect(fx.kernel.audit.tail()).toEqual([]);
  });

  it('refuses a batch with -32600 saying batches are not supported, on the stateless revision and in a 2025-11-25 session alike', async () => {
    const batch = JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } },
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: envelope() } },
    ]);
    const post = (headers: Record<string, string>) =>
      raw(endpoint.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${endpoint.token}`, ...headers },
        body: batch,
      });
    const refusal = {
      code: -32600,
      message: expect.stringMatching(/^Invalid Request: batches \(a JSON array of messages\) are not supported since MCP 2025-06-18/),
    };
    const modern = await post({ 'MCP-Protocol-Version': MODERN });
    expect(modern.status).toBe(400);
    expect(JSON.parse(modern.body)).toEqual({ jsonrpc: '2.0', id: null, error: refusal });
    const c = await connect(endpoint.url, endpoint.token);
    try {
      const session = await post({ 'Mcp-Session-Id': c.transport.sessionId!, 'MCP-Protocol-Version': '2025-11-25' });
      expect(session.status).toBe(400);
      expect(JSON.parse(session.body)).toEqual({ jsonrpc: '2.0', id: null, error: refusal });
      // The session goes on.
      expect((await c.client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await c.close();
    }
    expect(fx.kernel.audit.tail()).toEqual([]);
  });

  it('names an MCP-Protocol-Version it does not speak, instead of reporting a missing _meta', async () => {
    const r = await rpc(endpoint.url, endpoint.token, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'MCP-Protocol-Version': 'banana' });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).error).toEqual({
      code: -32022,
      message: 'Unsupported MCP-Protocol-Version "banana": this server speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, 2024-10-07.',
    });
  });

  it('gives each stateless client its own rate budget by declared name@version and connection, and names whose ran out', async () => {
    await endpoint.close();
    await fx.close();
    fx = makeKernel({ packs: [echoPack()], rateLimits: { maxCalls: 2, duplicateCooldownMs: 0, globalMaxCalls: 0 } });
    endpoint = new McpHttpEndpoint(fx.kernel, { logger });
    await endpoint.start();
    const call = async (who: string, n: number) => {
      const { body } = await stateless(endpoint, 'tools/call', { name: 'echo_safe', arguments: { text: `${who}-${n}` } }, who, '1.0');
      if (!body.result) throw new Error(JSON.stringify(body));
      return body.result;
    };
    const a = [await call('alpha', 1), await call('alpha', 2), await call('alpha', 3)];
    const b = await call('beta', 1);
    expect(a.map((x) => x.isError ?? false)).toEqual([false, false, true]);
    expect(a[2].structuredContent.code).toBe('RATE_LIMITED');
    expect(a[2].structuredContent.message).toContain('alpha@1.0');
    expect(b.isError ?? false).toBe(false);
  });

  it('gives two client processes that declare the same name@version (every Python client says mcp@0.1.0) a budget each when each has its own client token, and limits each', async () => {
    await endpoint.close();
    await fx.close();
    fx = makeKernel({ packs: [echoPack()], rateLimits: { maxCalls: 3, duplicateCooldownMs: 0, globalMaxCalls: 0 } });
    // memo serve token add first / second: each process presents its own.
    fx.kernel.settings.setToken('first', { digest: tokenDigest('1'.repeat(43)), created: '2026-12-06T00:00:00Z' });
    fx.kernel.settings.setToken('second', { digest: tokenDigest('2'.repeat(43)), created: '2026-12-06T00:00:00Z' });
    endpoint = new McpHttpEndpoint(fx.kernel, { logger, clients: clientTokenLookup(() => fx.kernel.settings.read()) });
    await endpoint.start();
    // A client process: the SDK v2 client on the stateless revision, declaring mcp@0.1.0, making four calls.
    const script = `
      const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
      const client = new Client({ name: 'mcp', version: '0.1.0' }, { versionNegotiation: { mode: { pin: '${MODERN}' } } });
      await client.connect(new StreamableHTTPClientTransport(new URL(process.env.URL), { requestInit: { headers: { Authorization: 'Bearer ' + process.env.TOKEN } } }));
      const out = [];
      for (let n = 0; n < 4; n++) {
        const r = await client.callTool({ name: 'echo_safe', arguments: { text: process.env.WHO + n } });
        out.push(r.isError ? r.structuredContent.code : 'ok');
      }
      await client.close();
      process.stdout.write(JSON.stringify(out));`;
    const run = (who: string, token: string) =>
      new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
          cwd: process.cwd(),
          env: { ...process.env, URL: endpoint.url, TOKEN: token, WHO: who },
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`client ${who} exited ${code}: ${err}`))));
      });
    expect(await run('first', '1'.repeat(43))).toEqual(['ok', 'ok', 'ok', 'RATE_LIMITED']);
    // Before, the second process was refused at once: the first had used the name's 3 calls.
    expect(await run('second', '2'.repeat(43))).toEqual(['ok', 'ok', 'ok', 'RATE_LIMITED']);
    // On the endpoint's one shared token the declared name is all there is to tell them apart.
    expect(await run('shared', endpoint.token)).toEqual(['ok', 'ok', 'ok', 'RATE_LIMITED']);
    expect(await run('shared-again', endpoint.token)).toEqual(['RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED']);
    // The audit shows the name both declared.
    expect(new Set(fx.kernel.audit.tail({ tool: 'echo_safe' }).map((a) => a.caller.id))).toEqual(new Set(['mcp@0.1.0']));
  });

  it('shows skills as prompts: prompts/list names them and prompts/get returns the instructions through read_skill (audited)', async () => {
    const old = await connect(endpoint.url, endpoint.token);
    try {
      const { prompts } = await old.client.listPrompts();
      expect(prompts).toEqual([{ name: 'release-notes', description: 'Writes release notes from the git log.' }]);
      const got = await old.client.getPrompt({ name: 'release-notes' });
      const text = (got.messages[0]!.content as { text: string }).text;
      expect(text).toContain('Read references/STYLE.md first.');
      expect(text).toContain('skill://release-notes/references/STYLE.md');
      expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'read_skill', caller: { kind: 'mcp' } });
      await expect(old.client.getPrompt({ name: 'no-such-skill' })).rejects.toMatchObject({ code: -32602 });
    } finally {
      await old.close();
    }
  });

  it('shows skill files as resources: resources/list names each SKILL.md, resources/read returns any file of the skill', async () => {
    const old = await connect(endpoint.url, endpoint.token);
    try {
      const { resources } = await old.client.listResources();
      expect(resources.map((r) => r.uri)).toEqual(['skill://release-notes/SKILL.md']);
      const skillMd = await old.client.readResource({ uri: 'skill://release-notes/SKILL.md' });
      expect((skillMd.contents[0] as { text: string }).text).toContain('name: release-notes');
      const style = await old.client.readResource({ uri: 'skill://release-notes/references/STYLE.md' });
      expect((style.contents[0] as { text: string }).text).toBe('Short lines. Past tense.\n');
      // A path that leaves the skill folder is refused by the skill's own sandbox, not served.
      await expect(old.client.readResource({ uri: 'skill://release-notes/../../etc/passwd' })).rejects.toThrow();
    } finally {
      await old.close();
    }
  });

  it('lists a skill whose description is over the 1,024-character limit cut to one line, on every list, and reads it whole', async () => {
    const words = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
    const extra = tempDir('memo-skills-long-');
    writeSkill(extra, 'long-description', words, 'Body.');
    await fx.kernel.loadSkills([{ dir: extra, source: 'extra' }]);
    const cut = (d: unknown) => {
      expect(typeof d).toBe('string');
      expect((d as string).length).toBeLessThanOrEqual(1024);
      expect(d as string).toMatch(/^word0 word1 .*…$/);
    };
    const old = await connect(endpoint.url, endpoint.token);
    try {
      const { prompts } = await old.client.listPrompts();
      cut(prompts.find((p) => p.name === 'long-description')?.description);
      const got = await old.client.getPrompt({ name: 'long-description' });
      cut(got.description);
      const { resources } = await old.client.listResources();
      cut(resources.find((r) => r.uri === 'skill://long-description/SKILL.md')?.description);
      const skillMd = await old.client.readResource({ uri: 'skill://long-description/SKILL.md' });
      expect((skillMd.contents[0] as { text: string }).text).toContain(words);
    } finally {
      await old.close();
    }
    const { body } = await stateless(endpoint, 'skills/list');
    expect(body.error).toBeUndefined();
    cut(
      (body.result.skills as { uri: string; frontmatter: { description: string } }[]).find((s) => s.uri === 'skill://long-description/SKILL.md')?.frontmatter
        .description,
    );
  });

  it('serves the skills extension to a client that negotiates it (skills/list over the stateless revision)', async () => {
    const { body } = await stateless(endpoint, 'skills/list');
    expect(body.error).toBeUndefined();
    expect(body.result.skills).toEqual([
      expect.objectContaining({
        uri: 'skill://release-notes/SKILL.md',
        frontmatter: { name: 'release-notes', description: 'Writes release notes from the git log.' },
      }),
    ]);
  });

  it('lists each skill as the Inspector’s skills/list --verify checks it: the served frontmatter verbatim, and a plain SKILL.md with its digest and size', async () => {
    writeSkill(skillsDir, 'licensed', 'A skill with every frontmatter key.', '# Licensed', {});
    fs.writeFileSync(
      path.join(skillsDir, 'licensed', 'SKILL.md'),
      '---\nname: licensed\ndescription: A skill with every frontmatter key.\nlicense: MIT\ncompatibility: needs nothing\nmetadata:\n  owner: docs-team\nallowed-tools: echo_safe\n---\n# Licensed\n',
    );
    await fx.kernel.loadSkills([{ dir: skillsDir, source: 'extra' }]);
    const { body } = await stateless(endpoint, 'skills/list');
    const listed = body.result.skills as Array<{ uri: string; frontmatter: Record<string, unknown>; resources: unknown }>;
    const reader = await connect(endpoint.url, endpoint.token);
    const read = async (uri: string) => ((await reader.client.readResource({ uri })).contents[0] as { text: string }).text;
    for (const skill of listed) {
      const text = await read(skill.uri);
      const frontmatter = parseYaml(text.split('\n---\n')[0]!.replace(/^---\n/, '')) as Record<string, unknown>;
      // Every key the served file declares is in the listing, with the same value.
      for (const [key, value] of Object.entries(frontmatter)) expect([skill.uri, key, skill.frontmatter[key]]).toEqual([skill.uri, key, value]);
      if (Array.isArray(skill.resources))
        for (const r of skill.resources as Array<{ uri: string; digest: string; size: number }>) {
          const bytes = Buffer.from(await read(r.uri), 'utf8');
          expect(r).toEqual({ uri: r.uri, digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`, size: bytes.length });
        }
    }
    await reader.close();
    const byName = new Map(listed.map((s) => [s.frontmatter.name, s]));
    expect(byName.get('licensed')!.frontmatter).toEqual({
      name: 'licensed',
      description: 'A skill with every frontmatter key.',
      license: 'MIT',
      compatibility: 'needs nothing',
      metadata: { owner: 'docs-team' },
      'allowed-tools': 'echo_safe',
    });
    // SKILL.md alone: verifiable. With files beyond it: dynamic, read on demand.
    expect(byName.get('licensed')!.resources).toEqual([expect.objectContaining({ uri: 'skill://licensed/SKILL.md', size: expect.any(Number) })]);
    expect(byName.get('release-notes')!.resources).toBe('dynamic');
  });

  it('tells a 2025-11-25 session when a skill is added (prompts and resources list_changed)', async () => {
    const seen: string[] = [];
    const old = await connect(endpoint.url, endpoint.token);
    try {
      old.client.setNotificationHandler(
        (await import('@modelcontextprotocol/sdk/types.js')).PromptListChangedNotificationSchema,
        () => void seen.push('prompts'),
      );
      await old.notificationsReady;
      await fx.kernel.watch();
      writeSkill(skillsDir, 'second-skill', 'Another one.', 'Body.');
      await eventually(() => seen.includes('prompts'), 'prompts/list_changed');
      await eventually(async () => (await old.client.listPrompts()).prompts.length === 2, 'the new prompt listed');
    } finally {
      await old.close();
    }
  });
});

describe('MCP stdio: both revisions', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  async function stdioPair() {
    fx = makeKernel({ packs: [echoPack()] });
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    const server = new McpStdioServer(fx.kernel, { stdin: toServer, stdout: toClient });
    await server.start();
    return { server, toServer, toClient };
  }

  it('answers a stateless request over stdio without an initialize handshake', async () => {
    const { server, toServer, toClient } = await stdioPair();
    const lines: string[] = [];
    let buf = '';
    toClient.on('data', (c: Buffer) => {
      buf += c.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
    toServer.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'echo_safe', arguments: { text: 'piped' }, _meta: envelope('pipe', '1') },
      }) + '\n',
    );
    await eventually(() => lines.length > 0, 'the answer');
    const answer = JSON.parse(lines[0]!);
    expect(answer.id).toBe(1);
    expect(JSON.stringify(answer.result.content)).toContain('piped');
    expect(fx.kernel.audit.tail().at(-1)!.caller).toMatchObject({ kind: 'mcp', id: 'pipe@1' });
    await server.close();
  });
});
