import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock } from '../../../kernel/clock.js';
import { isMemoError } from '../../../kernel/errors.js';
import { fetchWithRetry, retryAfterMs, type FetchRetryOptions } from '../../../kernel/util/fetch-with-retry.js';
import { atTeardown } from '../../helpers/cleanup.js';
import { waitFor } from '../../helpers/wait.js';

type Reply = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A server on 127.0.0.1 that answers each request with the next scripted reply (then the last one). */
class Script {
  readonly server: http.Server;
  replies: Reply[] = [];
  received = 0;
  url = '';
  constructor() {
    this.server = http.createServer((req, res) => {
      const reply = this.replies[Math.min(this.received, this.replies.length - 1)]!; // tests script at least one reply
      this.received++;
      req.resume();
      reply(req, res);
    });
  }
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
    atTeardown(() => {
      this.server.closeAllConnections();
      return new Promise((resolve) => this.server.close(resolve));
    });
    return this;
  }
  reply(...replies: Reply[]): void {
    this.replies = replies;
    this.received = 0;
  }
}

const answer =
  (code: number, headers: Record<string, string> = {}, body = `status ${code}`): Reply =>
  (_req, res) => {
    res.writeHead(code, { 'content-type': 'text/plain', ...headers });
    res.end(body);
  };
const reset: Reply = (req) => req.socket.resetAndDestroy();
const hang: Reply = () => {};

const rejection = async (p: Promise<unknown>): Promise<Error & { code?: string; details?: Record<string, unknown> }> => {
  try {
    await p;
  } catch (err) {
    return err as Error & { code?: string; details?: Record<string, unknown> };
  }
  throw new Error('expected a rejection');
};

describe('fetchWithRetry against a real server on 127.0.0.1', () => {
  let s: Script;
  let clock: ManualClock;
  let waits: number[];
  /** Records each wait and returns at once; the clock moves by the wait, as a real one would. */
  const opts = <T = Response>(extra: FetchRetryOptions<T> = {}): FetchRetryOptions<T> => ({
    clock,
    random: () => 0,
    sleep: (ms) => {
      waits.push(ms);
      clock.advance(ms);
      return Promise.resolve();
    },
    ...extra,
  });

  beforeAll(async () => {
    s = await new Script().start();
  });
  beforeEach(() => {
    clock = new ManualClock(Date.UTC(2026, 5, 20, 12, 0, 0));
    waits = [];
  });

  it('returns the first good reply without waiting', async () => {
    s.reply(answer(200, {}, 'hello'));
    const res = await fetchWithRetry(s.url, {}, opts());
    expect(await res.text()).toBe('hello');
    expect(waits).toEqual([]);
  });

  it('retries 503 and 500 with exponential backoff, then returns the good reply', async () => {
    s.reply(answer(503), answer(500), answer(200, {}, 'ok'));
    const res = await fetchWithRetry(s.url, {}, opts());
    expect(await res.text()).toBe('ok');
    expect(s.received).toBe(3);
    expect(waits).toEqual([1000, 2000]);
  });

  it('caps the backoff at maxDelayMs', async () => {
    s.reply(answer(502), answer(502), answer(502), answer(502), answer(200));
    await fetchWithRetry(s.url, {}, opts({ attempts: 5, baseDelayMs: 1000, maxDelayMs: 3000 }));
    expect(waits).toEqual([1000, 2000, 3000, 3000]);
  });

  it('takes up to `jitter` of each backoff off at random, never more', async () => {
    s.reply(answer(503), answer(503), answer(200));
    await fetchWithRetry(s.url, {}, opts({ jitter: 0.5, random: () => 0.999 }));
    expect(waits).toEqual([500, 1001]);
    waits = [];
    s.reply(answer(503), answer(200));
    await fetchWithRetry(s.url, {}, opts({ jitter: 0.5, random: () => 0.5 }));
    expect(waits).toEqual([750]);
  });

  it('waits what a 429 Retry-After in seconds asks, not the backoff', async () => {
    s.reply(answer(429, { 'retry-after': '7' }), answer(200));
    await fetchWithRetry(s.url, {}, opts());
    expect(waits).toEqual([7000]);
  });

  it('waits until a Retry-After HTTP date on a 503', async () => {
    s.reply(answer(503, { 'retry-after': new Date(clock.now() + 5000).toUTCString() }), answer(200));
    await fetchWithRetry(s.url, {}, opts());
    expect(waits).toEqual([5000]);
  });

  it('prefers retry-after-ms to Retry-After', async () => {
    s.reply(answer(429, { 'retry-after-ms': '1500', 'retry-after': '9' }), answer(200));
    await fetchWithRetry(s.url, {}, opts());
    expect(waits).toEqual([1500]);
  });

  it('fails at once when Retry-After is beyond the cap, and says when to retry', async () => {
    s.reply(answer(429, { 'retry-after': '120' }), answer(200));
    const err = await rejection(fetchWithRetry(s.url, {}, opts({ maxRetryAfterMs: 30_000 })));
    expect(isMemoError(err)).toBe(true);
    expect(err.message).toBe('HTTP 429: the server asks to retry after 2026-06-20T12:02:00Z (in 120 s).');
    expect(err.details).toEqual({ retry: 'retry-after', attempts: 1, retryAfterMs: 120_000 });
    expect(s.received).toBe(1);
    expect(waits).toEqual([]);
  });

  it('gives up after `attempts` in all, naming the last status', async () => {
    s.reply(answer(503));
    const err = await rejection(fetchWithRetry(s.url, {}, opts({ attempts: 3 })));
    expect(err.message).toBe('HTTP 503 (tried 3 times).');
    expect(err.details).toEqual({ retry: 'attempts', attempts: 3 });
    expect(s.received).toBe(3);
  });

  it('retries a reset connection, then returns the reply that follows', async () => {
    s.reply(reset, answer(200, {}, 'back'));
    const res = await fetchWithRetry(s.url, {}, opts());
    expect(await res.text()).toBe('back');
    expect(waits).toEqual([1000]);
  });

  it('returns a reply that is not retried as it is (a 404 is for the caller to read)', async () => {
    s.reply(answer(404, {}, 'nope'));
    const res = await fetchWithRetry(s.url, {}, opts());
    expect(res.status).toBe(404);
    expect(s.received).toBe(1);
  });

  it('sends nothing when the signal has already aborted', async () => {
    s.reply(answer(200));
    const c = new AbortController();
    c.abort();
    const err = await rejection(fetchWithRetry(s.url, { signal: c.signal }, opts()));
    expect(err.code).toBe('CANCELLED');
    expect(s.received).toBe(0);
  });

  it('stops during a wait on the clock, and starts no further attempt', async () => {
    s.reply(answer(503), answer(200));
    const c = new AbortController();
    const pending = fetchWithRetry(s.url, { signal: c.signal }, { clock, random: () => 0 });
    await waitFor(() => clock.pending > 0, { what: 'the backoff timer' });
    c.abort();
    expect((await rejection(pending)).code).toBe('CANCELLED');
    expect(s.received).toBe(1);
    expect(clock.pending).toBe(0);
  });

  it('retries after the clock has moved by the backoff', async () => {
    s.reply(answer(503), answer(200, {}, 'later'));
    const pending = fetchWithRetry(s.url, {}, { clock, random: () => 0 });
    await waitFor(() => clock.pending > 0, { what: 'the backoff timer' });
    clock.advance(999);
    expect(s.received).toBe(1);
    clock.advance(1);
    expect(await (await pending).text()).toBe('later');
    expect(s.received).toBe(2);
  });

  it('stops a running attempt when the signal aborts', async () => {
    s.reply(hang);
    const c = new AbortController();
    const pending = fetchWithRetry(s.url, { signal: c.signal }, opts());
    await waitFor(() => s.received === 1, { what: 'the request to arrive' });
    c.abort();
    expect((await rejection(pending)).code).toBe('CANCELLED');
    expect(waits).toEqual([]);
  });

  it('ends an attempt after attemptTimeoutMs on the clock and retries it as a time-out', async () => {
    s.reply(hang, answer(200, {}, 'second'));
    const seen: unknown[] = [];
    const pending = fetchWithRetry(
      s.url,
      {},
      {
        clock,
        random: () => 0,
        attemptTimeoutMs: 5000,
        sleep: (ms) => (waits.push(ms), Promise.resolve()),
        judge: (outcome) => {
          if ('error' in outcome) {
            seen.push(outcome.timedOut);
            return { retry: outcome.error };
          }
          return { done: outcome.response };
        },
      },
    );
    await waitFor(() => s.received === 1, { what: 'the first request' });
    clock.advance(5000);
    expect(await (await pending).text()).toBe('second');
    expect(seen).toEqual([true]);
    expect(waits).toEqual([1000]);
  });

  it('starts no retry that could not end within the budget', async () => {
    s.reply(answer(503));
    const err = await rejection(fetchWithRetry(s.url, {}, opts({ attempts: 5, budgetMs: 2500 })));
    expect(err.details).toEqual({ retry: 'budget', attempts: 2 });
    expect(waits).toEqual([1000]);
  });

  it("lets a judge read the body, stop at once by throwing, and name the give-up in the caller's words", async () => {
    s.reply(answer(200, {}, '{"error":"busy"}'), answer(200, {}, 'fatal'), answer(200, {}, 'ok'));
    const judged = await rejection(
      fetchWithRetry(
        s.url,
        {},
        {
          ...opts<string>(),
          judge: async (outcome, attempt) => {
            if ('error' in outcome) throw outcome.error;
            const text = await outcome.response.text();
            if (text === 'fatal') throw new Error(`fatal on attempt ${attempt}`);
            return text.includes('busy') ? { retry: 'busy', retryAfterMs: 10 } : { done: text };
          },
        },
      ),
    );
    expect(judged.message).toBe('fatal on attempt 2');
    expect(waits).toEqual([10]);

    s.reply(answer(503));
    const given = await rejection(fetchWithRetry(s.url, {}, opts({ attempts: 2, giveUp: (info) => new Error(`gave up after ${info.attempts}: ${info.why}`) })));
    expect(given.message).toBe('gave up after 2: attempts');
  });

  it('tells onRetry each wait before it starts', async () => {
    s.reply(answer(503), answer(429, { 'retry-after': '2' }), answer(200));
    const told: Array<{ attempt: number; delayMs: number }> = [];
    await fetchWithRetry(s.url, {}, opts({ onRetry: ({ attempt, delayMs }) => told.push({ attempt, delayMs }) }));
    expect(told).toEqual([
      { attempt: 1, delayMs: 1000 },
      { attempt: 2, delayMs: 2000 },
    ]);
  });
});

describe('retryAfterMs', () => {
  const now = Date.UTC(2026, 5, 20, 12, 0, 0);
  const h = (init: Record<string, string>) => new Headers(init);
  it('reads seconds, HTTP dates and retry-after-ms', () => {
    expect(retryAfterMs(h({ 'retry-after': '3' }), now)).toBe(3000);
    expect(retryAfterMs(h({ 'retry-after': ' 0 ' }), now)).toBe(0);
    expect(retryAfterMs(h({ 'retry-after': '1.5' }), now)).toBe(1500);
    expect(retryAfterMs(h({ 'retry-after': 'Sat, 20 Jun 2026 12:00:04 GMT' }), now)).toBe(4000);
    expect(retryAfterMs(h({ 'retry-after-ms': '250' }), now)).toBe(250);
  });
  it('gives a date in the past as no wait, and nothing for what it cannot read', () => {
    expect(retryAfterMs(h({ 'retry-after': 'Sat, 20 Jun 2026 11:00:00 GMT' }), now)).toBe(0);
    expect(retryAfterMs(h({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(retryAfterMs(h({ 'retry-after': '-5' }), now)).toBeUndefined();
    expect(retryAfterMs(h({ 'retry-after-ms': 'x' }), now)).toBeUndefined();
    expect(retryAfterMs(h({}), now)).toBeUndefined();
  });
});
