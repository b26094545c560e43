import type { ModelProvider } from '../../../kernel/index.js';
import { fixture, fixtureText, recorded, ReplayServer } from './replay-server.js';
import { bootKernel, configWith, firstMessages, KEY, rejection, request, type Booted, type ConfigOverrides } from './conversation.js';

const NOW = Date.parse('2025-06-01T12:00:00Z');
type Kind = 'openai-compatible' | 'anthropic' | 'gemini';
const MODELS: Record<Kind, string> = { 'openai-compatible': 'gpt-4o', anthropic: 'claude-sonnet-4-20250514', gemini: 'gemini-2.0-flash' };
const OK: Record<Kind, string> = {
  'openai-compatible': 'openai/02-final-answer.json',
  anthropic: 'anthropic/02-final-answer.json',
  gemini: 'gemini/02-final-answer.json',
};

describe('provider errors, retries and cancellation', () => {
  let booted: Booted;
  let server: ReplayServer;
  let sleeps: number[];

  /** A provider from the pack's own factory, with a fake sleep (records, never waits), clock and no jitter (exact backoff figures). */
  const make = (kind: Kind, extra: ConfigOverrides = {}, deps: Record<string, unknown> = {}): ModelProvider =>
    booted.factories.get(kind)!(
      configWith({ name: 'test', kind, baseUrl: kind === 'openai-compatible' ? `${server.url}/v1` : server.url, model: MODELS[kind], apiKey: KEY }, extra),
      { fetch, sleep: (ms: number) => Promise.resolve(void sleeps.push(ms)), now: () => NOW, random: () => 0, env: {}, ...deps } as never,
    );
  const ask = (p: ModelProvider, kind: Kind, signal?: AbortSignal) => p.chat(request(firstMessages(), { model: MODELS[kind], ...(signal ? { signal } : {}) }));

  beforeAll(async () => {
    booted = await bootKernel();
    server = await ReplayServer.start();
  });
  afterAll(async () => {
    await server.close();
    await booted.fx.close();
  });
  beforeEach(() => {
    server.reset();
    sleeps = [];
  });

  describe('human-readable messages', () => {
    it("shows OpenAI's error.message with the echoed key masked, and does not retry a 401", async () => {
      server.reply(recorded('openai/error-401-invalid-api-key.json'));
      const err = await rejection(ask(make('openai-compatible'), 'openai-compatible'));
      expect(err).toMatchObject({
        name: 'ProviderError',
        message: 'Incorrect API key provided: [masked]. You can find your API key at https://platform.openai.com/account/api-keys.',
        status: 401,
        retryable: false,
        detail: 'openai-compatible HTTP 401 invalid_request_error invalid_api_key request req_4f1e0c2b9a',
      });
      expect(server.received).toHaveLength(1);
      expect(sleeps).toEqual([]);
    });

    it('shows Anthropic\'s "invalid x-api-key" through a provider the kernel built', async () => {
      server.reply(recorded('anthropic/error-401-authentication.json'));
      const p = booted.create({ kind: 'anthropic', baseUrl: server.url, model: MODELS.anthropic, apiKey: KEY });
      const err = await rejection(ask(p, 'anthropic'));
      expect(err).toMatchObject({
        message: 'invalid x-api-key',
        status: 401,
        retryable: false,
        detail: 'anthropic HTTP 401 authentication_error request req_011CSHoEeqs5C35K2UUqR7Fy',
      });
      expect(JSON.stringify(err)).not.toContain('"type":"error"');
    });

    it("shows Gemini's error.message for 400 INVALID_ARGUMENT, keeping status and reason in the detail", async () => {
      server.reply(recorded('gemini/error-400-invalid-argument.json'), recorded('gemini/error-400-api-key-invalid.json'));
      const schema = await rejection(ask(make('gemini'), 'gemini'));
      expect(schema).toMatchObject({
        message: 'Invalid JSON payload received. Unknown name "additionalProperties" at \'tools[0].function_declarations[0].parameters\': Cannot find field.',
        status: 400,
        retryable: false,
        detail: 'gemini HTTP 400 INVALID_ARGUMENT',
      });
      const key = await rejection(ask(make('gemini'), 'gemini'));
      expect(key).toMatchObject({
        message: 'API key not valid. Please pass a valid API key.',
        retryable: false,
        detail: 'gemini HTTP 400 INVALID_ARGUMENT API_KEY_INVALID',
      });
    });

    it('names the HTTP status and the page title of a non-JSON 502 from a proxy, never the page itself', async () => {
      const page = fixtureText('common/proxy-502.html');
      const bad = { status: 502, headers: { 'content-type': 'text/html' }, body: page };
      server.reply(bad, bad, bad);
      const err = await rejection(ask(make('openai-compatible'), 'openai-compatible'));
      const host = new URL(server.url).host;
      expect(err).toMatchObject({
        message: `${host} answered HTTP 502 Bad Gateway with a page that is not JSON ("502 Bad Gateway"), probably from a proxy or gateway.`,
        status: 502,
        retryable: true,
        detail: 'openai-compatible HTTP 502 non-JSON body (text/html); gave up after 3 attempts',
      });
      expect(err.message).not.toContain('<');
      expect(server.received).toHaveLength(3);
    });

    it('reads an error a gateway reports inside a 200 reply', async () => {
      server.reply({ status: 200, body: { error: { message: 'Provider returned error', code: 400 }, user_id: 'u1' } });
      expect(await rejection(ask(make('openai-compatible'), 'openai-compatible'))).toMatchObject({
        message: 'Provider returned error',
        status: 400,
        retryable: false,
      });
    });

    it('refuses a 200 reply that is not JSON without retrying', async () => {
      server.reply({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'hello' });
      expect(await rejection(ask(make('anthropic'), 'anthropic'))).toMatchObject({
        status: 200,
        retryable: false,
        message: expect.stringContaining('not JSON'),
      });
      expect(server.received).toHaveLength(1);
    });
  });

  describe('the key', () => {
    const PLAIN = 'memo-plain-key-abcdef123456';

    it.each<Kind>(['openai-compatible', 'anthropic', 'gemini'])(
      'never appears in a %s error message or detail, even when the server echoes it',
      async (kind) => {
        server.reply(
          { status: 400, body: { error: { message: `key ${PLAIN} is not allowed here`, type: `bad_${PLAIN}` } } },
          { status: 503, headers: { 'content-type': 'text/html' }, body: `<title>${PLAIN} down</title>` },
          { status: 503, headers: { 'content-type': 'text/html' }, body: `<title>${PLAIN} down</title>` },
          { status: 503, headers: { 'content-type': 'text/html' }, body: `<title>${PLAIN} down</title>` },
        );
        const p = make(kind, { apiKey: PLAIN, headers: { 'X-Session-Token': 'session-secret-value-99' } });
        const first = await rejection(ask(p, kind));
        const second = await rejection(ask(p, kind));
        for (const err of [first, second]) {
          expect(`${err.message} ${err.detail}`).not.toContain(PLAIN);
          expect(`${err.message} ${err.detail}`).toContain('[masked]');
        }
        expect(first.message).toBe('key [masked] is not allowed here');
      },
    );

    it('is required before any request for a hosted preset, naming the variable to set', async () => {
      const calls: unknown[] = [];
      const spy = ((...args: unknown[]) => {
        calls.push(args);
        return Promise.reject(new Error('no request expected'));
      }) as typeof fetch;
      const groq = make('openai-compatible', { preset: 'groq', baseUrl: undefined, apiKey: undefined }, { fetch: spy });
      expect(await rejection(ask(groq, 'openai-compatible'))).toMatchObject({
        message: 'no API key: set $GROQ_API_KEY or store a key with configure_provider (provider "test").',
        status: null,
        retryable: false,
      });
      const named = make('anthropic', { baseUrl: undefined, apiKey: undefined, apiKeyEnv: 'MEMO_TEST_UNSET_KEY' }, { fetch: spy });
      expect(await rejection(ask(named, 'anthropic'))).toMatchObject({
        message: 'no API key: set $MEMO_TEST_UNSET_KEY or store a key with configure_provider (provider "test").',
      });
      const overridden = make(
        'openai-compatible',
        { preset: 'openai', apiKey: undefined },
        { fetch: spy, env: { OPENAI_API_KEY: 'sk-should-not-travel-elsewhere-000' } },
      );
      expect(await rejection(ask(overridden, 'openai-compatible'))).toMatchObject({
        message: expect.stringMatching(/^no API key: set apiKeyEnv \(e\.g\. \$OPENAI_API_KEY\)/),
      });
      expect(calls).toEqual([]);
    });

    it("falls back to a hosted preset's conventional variable only at the preset's own URL", async () => {
      const seen: Array<{ url: string; headers: Record<string, string> }> = [];
      const capture = ((url: string, init: RequestInit) => {
        seen.push({ url, headers: init.headers as Record<string, string> });
        return Promise.resolve(
          new Response(JSON.stringify(fixture('gemini/02-final-answer.json').response.body), { status: 200, headers: { 'content-type': 'application/json' } }),
        );
      }) as unknown as typeof fetch;
      const p = make('gemini', { baseUrl: undefined, apiKey: undefined }, { fetch: capture, env: { GEMINI_API_KEY: 'AIza-from-the-environment' } });
      await ask(p, 'gemini');
      expect(seen[0]?.url).toBe('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent');
      expect(seen[0]?.headers['x-goog-api-key']).toBe('AIza-from-the-environment');
    });
  });

  describe('retries', () => {
    it('retries a 500 and returns the answer that follows (one backoff of 1 s)', async () => {
      server.reply(recorded('openai/error-500-server.json'), recorded('openai/02-final-answer.json'));
      const reply = await ask(make('openai-compatible'), 'openai-compatible');
      expect(reply.finishReason).toBe('stop');
      expect(server.received).toHaveLength(2);
      expect(server.request(1).raw).toBe(server.request(0).raw);
      expect(sleeps).toEqual([1000]);
    });

    it('gives up on an overloaded Anthropic API after 3 attempts with exponential backoff', async () => {
      const overloaded = recorded('anthropic/error-529-overloaded.json');
      server.reply(overloaded, overloaded, overloaded, overloaded);
      const err = await rejection(ask(make('anthropic'), 'anthropic'));
      expect(err).toMatchObject({
        message: 'Overloaded',
        status: 529,
        retryable: true,
        detail: 'anthropic HTTP 529 overloaded_error; gave up after 3 attempts',
      });
      expect(server.received).toHaveLength(3);
      expect(sleeps).toEqual([1000, 2000]);
    });

    it('waits what Retry-After says (seconds) on a 429', async () => {
      server.reply(recorded('openai/error-429-rate-limit.json'), recorded('openai/02-final-answer.json'));
      await ask(make('openai-compatible'), 'openai-compatible');
      expect(sleeps).toEqual([7000]);
    });

    it('waits until a Retry-After HTTP date', async () => {
      server.reply(
        { status: 429, headers: { 'retry-after': new Date(NOW + 5000).toUTCString() }, body: fixture('anthropic/error-429-rate-limit.json').response.body },
        recorded(OK.anthropic),
      );
      await ask(make('anthropic'), 'anthropic');
      expect(sleeps).toEqual([5000]);
    });

    it("waits Gemini's RetryInfo delay when there is no Retry-After header", async () => {
      server.reply(recorded('gemini/error-429-resource-exhausted.json'), recorded(OK.gemini));
      await ask(make('gemini'), 'gemini');
      expect(sleeps).toEqual([13000]);
    });

    it('fails at once, saying when to retry, when Retry-After is longer than the 30 s cap', async () => {
      server.reply({ ...recorded('anthropic/error-429-rate-limit.json'), headers: { 'content-type': 'application/json', 'retry-after': '120' } });
      const err = await rejection(ask(make('anthropic'), 'anthropic'));
      expect(err.message).toBe(
        'This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. (the provider asks to retry after 2025-06-01T12:02:00Z, in 120 s)',
      );
      expect(err).toMatchObject({ status: 429, retryable: true });
      expect(server.received).toHaveLength(1);
      expect(sleeps).toEqual([]);
    });

    it('retries network errors and then names the host it could not reach', async () => {
      server.reply({ destroy: true }, { destroy: true }, { destroy: true });
      const err = await rejection(ask(make('gemini'), 'gemini'));
      expect(err).toMatchObject({
        status: null,
        retryable: true,
        message: expect.stringMatching(new RegExp(`^Could not reach ${new URL(server.url).host} \\(`)),
      });
      expect(server.received).toHaveLength(3);
      expect(sleeps).toEqual([1000, 2000]);
    });

    it('suggests starting a local server that refuses connections', async () => {
      const closed = await ReplayServer.start();
      const url = closed.url;
      await closed.close();
      const err = await rejection(
        ask(make('openai-compatible', { preset: 'ollama', baseUrl: `${url}/v1`, apiKey: undefined }, { retry: { attempts: 1 } }), 'openai-compatible'),
      );
      expect(err).toMatchObject({ message: `Could not reach ${new URL(url).host} (ECONNREFUSED): is the server running?`, status: null, retryable: true });
    });
  });

  describe('cancellation', () => {
    it('sends nothing when the signal is already aborted', async () => {
      const c = new AbortController();
      c.abort();
      expect(await rejection(ask(make('openai-compatible'), 'openai-compatible', c.signal))).toMatchObject({
        message: 'The request was cancelled.',
        retryable: false,
        status: null,
      });
      expect(server.received).toHaveLength(0);
    });

    it('stops during the backoff and sends no further attempt', async () => {
      server.reply(recorded('anthropic/error-529-overloaded.json'), recorded(OK.anthropic));
      const c = new AbortController();
      let sleeping!: () => void;
      const asleep = new Promise<void>((r) => (sleeping = r));
      const sleep = (ms: number, signal: AbortSignal) =>
        new Promise<void>((_, reject) => {
          sleeps.push(ms);
          sleeping();
          signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        });
      const pending = ask(make('anthropic', {}, { sleep }), 'anthropic', c.signal);
      await asleep;
      c.abort();
      expect(await rejection(pending)).toMatchObject({ name: 'ProviderError', message: 'The request was cancelled.', detail: 'cancelled' });
      expect(sleeps).toEqual([1000]);
      expect(server.received).toHaveLength(1);
    });

    it('interrupts the real backoff timer of a kernel-built provider (a 25 s Retry-After is not waited out)', async () => {
      server.reply({ status: 503, headers: { 'retry-after': '25' }, body: { error: { message: 'busy' } } }, recorded(OK['openai-compatible']));
      const p = booted.create({ kind: 'openai-compatible', baseUrl: `${server.url}/v1`, model: 'gpt-4o', apiKey: KEY });
      const c = new AbortController();
      const pending = ask(p, 'openai-compatible', c.signal);
      await server.waitFor(1);
      await new Promise((r) => setTimeout(r, 50));
      c.abort();
      expect(await rejection(pending)).toMatchObject({ message: 'The request was cancelled.' });
      expect(server.received).toHaveLength(1);
    }, 5000);

    it('stops a request the server never answers', async () => {
      server.reply({ hang: true });
      const c = new AbortController();
      const pending = ask(make('gemini'), 'gemini', c.signal);
      await server.waitFor(1);
      c.abort();
      expect(await rejection(pending)).toMatchObject({ message: 'The request was cancelled.' });
    }, 5000);
  });
});
