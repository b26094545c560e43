import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpHttpEndpoint } from '../../kernel/mcp/mcp-http-server.js';
import { DEFAULT_RATE_LIMITS } from '../../kernel/rate-limit/rate-limiter.js';
import { echoPack, makeKernel, type Fixture } from '../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS } from '../helpers/wait.js';
import { connect } from './mcp-helpers.js';

/**
 * Fair limits over MCP, on real HTTP with the real kernel: the seed's per-caller limits (30 calls a
 * minute, a 5 s cooldown on an identical call) apply to each caller on its own. Each 2025-11-25
 * session is a caller; each stateless 2026-07-28 client is a caller by its declared name@version.
 * The machine-wide ceiling (default 300/min) would refuse most of 1000 calls in a minute, so these
 * tests turn it off and say so; the kernel's clock is a manual one, so no window refills mid-test.
 */

const CLIENTS = 50;
const CALLS_EACH = 20;
const MODERN = '2026-07-28';
const SEED_LIMITS_WITHOUT_CEILING = { ...DEFAULT_RATE_LIMITS, globalMaxCalls: 0 };

/** What every client of either SDK line does here: call a tool, and close. */
interface Caller {
  call(text: string): Promise<CallToolResult>;
  close(): Promise<void>;
}

async function sessionV1(url: string, token: string, i: number): Promise<Caller> {
  const c = await connect(url, token, { name: `session-client-${i}` });
  return {
    call: async (text) => (await c.client.callTool({ name: 'echo_safe', arguments: { text } })) as CallToolResult,
    close: () => c.close(),
  };
}

async function statelessV2(url: string, token: string, i: number): Promise<Caller> {
  const client = new ClientV2({ name: `stateless-client-${i}`, version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(new HttpV2(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return {
    call: async (text) => (await client.callTool({ name: 'echo_safe', arguments: { text } })) as CallToolResult,
    close: () => client.close().catch(() => {}),
  };
}

function message(r: CallToolResult): string {
  return (r.content[0] as { text: string }).text;
}

const revisions = [
  {
    revision: '50 SDK v1 sessions (2025-11-25)',
    open: sessionV1,
    // Each session is its own caller, whatever name its client declares.
    budget: () => "this MCP session's 30 calls per minute",
    auditId: (i: number) => `session-client-${i}`,
  },
  {
    revision: '50 SDK v2 stateless clients (2026-07-28) with distinct names',
    open: statelessV2,
    budget: (i: number) => `the MCP client stateless-client-${i}@1.0.0's 30 calls per minute`,
    auditId: (i: number) => `stateless-client-${i}@1.0.0`,
  },
];

describe.each(revisions)('MCP fair limits: $revision', ({ open, budget, auditId }) => {
  let fx: Fixture;
  let endpoint: McpHttpEndpoint;
  let callers: Caller[] = [];

  beforeAll(async () => {
    fx = makeKernel({ packs: [echoPack()], rateLimits: SEED_LIMITS_WITHOUT_CEILING });
    endpoint = new McpHttpEndpoint(fx.kernel);
    await endpoint.start();
    callers = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => open(endpoint.url, endpoint.token, i)));
  }, SPAWN_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all(callers.map((c) => c.close()));
    await endpoint.close();
    await fx.close();
  });

  it(
    'completes 50 concurrent clients x 20 distinct calls under the seed per-caller limits (global ceiling off): all 1000 succeed, each client in its own budget',
    async () => {
      const results = await Promise.all(
        callers.map(async (c, i) => {
          const mine: CallToolResult[] = [];
          for (let k = 0; k < CALLS_EACH; k++) mine.push(await c.call(`client ${i} call ${k}`));
          return mine;
        }),
      );
      const refused = results.flat().filter((r) => r.isError);
      expect(refused.map(message)).toEqual([]);
      expect(results.flat()).toHaveLength(CLIENTS * CALLS_EACH);
      expect(results[7]![13]!.structuredContent).toEqual({ echoed: { text: 'client 7 call 13' } });
      // One budget per client, and every call audited under its client.
      expect(fx.kernel.limiter.callers).toBe(CLIENTS);
      const audited = fx.kernel.audit.tail().filter((e) => e.tool === 'echo_safe');
      expect(audited).toHaveLength(CLIENTS * CALLS_EACH);
      expect(audited.every((e) => e.outcome === 'ok')).toBe(true);
      const perClient = new Map<string, number>();
      for (const e of audited) perClient.set(e.caller.id ?? '', (perClient.get(e.caller.id ?? '') ?? 0) + 1);
      expect(perClient).toEqual(new Map(Array.from({ length: CLIENTS }, (_, i) => [auditId(i), CALLS_EACH])));
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'refuses the one client that goes past its 30 calls, naming its own budget, while the others keep calling',
    async () => {
      const greedy = callers[0]!;
      const outcomes: CallToolResult[] = [];
      // Past whatever it used before: 31 more distinct calls always cross 30.
      for (let k = 0; k <= DEFAULT_RATE_LIMITS.maxCalls; k++) outcomes.push(await greedy.call(`greedy ${k}`));
      const refusal = outcomes.find((r) => r.isError);
      expect(refusal).toBeDefined();
      expect(message(refusal!)).toMatch(/^RATE_LIMITED: Tool call limit reached: /);
      expect(message(refusal!)).toContain(budget(0));
      expect(message(refusal!)).toMatch(/refills in \d+ s/);
      const others = await Promise.all(callers.slice(1).map((c, i) => c.call(`after the greedy one, client ${i + 1}`)));
      expect(others.filter((r) => r.isError).map(message)).toEqual([]);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'applies the identical-call cooldown per client: another client may make the same call at once, the same client may not',
    async () => {
      const [a, b] = [callers[CLIENTS - 1]!, callers[CLIENTS - 2]!];
      expect((await a.call('the same read')).isError).toBeFalsy();
      expect((await b.call('the same read')).isError).toBeFalsy();
      const again = await a.call('the same read');
      expect(again.isError).toBe(true);
      expect(message(again)).toMatch(
        /^RATE_LIMITED: The same echo_safe call was made by .* ago; the identical call cooldown of this caller allows it once every 5 s/,
      );
    },
    SPAWN_TIMEOUT_MS,
  );
});
