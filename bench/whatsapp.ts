import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeEventBuffer, type WAMessage } from 'baileys';
import { createKernel, type Kernel, type PackDefinition } from '../kernel/index.js';
import { rng, vocabulary, zipfPicker as zipf } from './corpus.js';
import { percentile } from './stats.js';

/**
 * The WhatsApp pack's history at scale, through the real pack in a real kernel, fed by Baileys' own
 * event buffer (a socket without a network, as in the tests):
 * 1. 100,000 messages in 1,000 chats (900 people, 100 groups; Zipf-distributed words), delivered
 *    as history sync batches of 2,000 messages: messages/s until stored and indexed;
 * 2. 2,000 live messages one by one (each its own buffered upsert): messages/s;
 * 3. whatsapp_search through the pipeline (p50/p99) for a common word, a rare word, two words, a
 *    phrase, a prefix, and with chat, sender and date filters; goal p50 < 10 ms;
 * 4. relevance: a planted message must be the first result for its words;
 * 5. whatsapp_latest and a page of whatsapp_messages; the database size on disk.
 */

const MESSAGES = Number(process.env.BENCH_WHATSAPP_MESSAGES ?? 100_000);
const CHATS = 1000;
const BATCH = 2000;
const LIVE = 2000;
const QUERIES = 200;
const PLUGINS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../plugins');
const T0 = 1735689600; // 2025-01-01

const person = (i: number) => `4917${String(10_000_000 + i)}@s.whatsapp.net`;
const group = (i: number) => `1203630000${String(10_000 + i)}@g.us`;
const chatOf = (i: number) => (i < 900 ? person(i) : group(i));

interface Sock {
  ev: ReturnType<typeof makeEventBuffer>;
  pending: Set<Promise<void>>;
}

const silent = { level: 'silent', child: () => silent, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

async function settle(sock: Sock): Promise<void> {
  sock.ev.flush();
  for (let i = 0; i < 3; i++) {
    await Promise.all([...sock.pending]);
    await new Promise((r) => setImmediate(r));
  }
}

async function boot(root: string, dataDir: string): Promise<{ kernel: Kernel; sock: () => Sock }> {
  let current: Sock | null = null;
  const host: PackDefinition = {
    id: 'bench-whatsapp-host',
    version: '1.0.0',
    tools: [],
    activate: (api) =>
      api.provide('whatsapp.socket', () => {
        const ev = makeEventBuffer(silent);
        const sock: Sock = { ev, pending: new Set() };
        const process_ = ev.process.bind(ev);
        current = sock;
        return {
          ev: {
            process: (handler: (events: object) => unknown) =>
              process_(async (events) => {
                const p = Promise.resolve(handler(events)).then(() => undefined);
                sock.pending.add(p);
                await p;
                sock.pending.delete(p);
              }),
          },
          user: { id: '4917000000001@s.whatsapp.net' },
          sendMessage: () => Promise.resolve(undefined),
          requestPairingCode: () => Promise.reject(new Error('no network')),
          logout: () => Promise.resolve(),
          end: () => {},
        };
      }),
  };
  const kernel = createKernel({
    root,
    dataDir,
    rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 },
    packs: [host],
    prompter: { ask: () => Promise.resolve('allow-once' as const) },
  });
  const states = await kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['whatsapp'] }]);
  const state = states.find((s) => s.id === 'whatsapp');
  if (state?.status !== 'loaded') throw new Error(`whatsapp did not load: ${state?.error ?? 'not found'}`);
  // A linked device, as `memo whatsapp link` leaves it (the bench socket ignores the keys).
  const auth = path.join(dataDir, 'packs-data', 'whatsapp', 'auth');
  fs.mkdirSync(auth, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(auth, 'creds.json'), JSON.stringify({ me: { id: '4917000000001:3@s.whatsapp.net' }, account: { details: 'bench' } }), {
    mode: 0o600,
  });
  await kernel.start();
  if (!current) throw new Error('the connection service made no socket');
  const sock = current as Sock;
  sock.ev.emit('connection.update', { connection: 'open' });
  await settle(sock);
  return { kernel, sock: () => current! };
}

async function call(kernel: Kernel, tool: string, args: Record<string, unknown>): Promise<unknown> {
  const r = await kernel.invoke({ tool, args, caller: { kind: 'agent' } });
  if (!r.ok) throw new Error(`${tool} failed: ${r.error.code} ${r.error.message}`);
  return r.value;
}

function ms(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

export async function benchWhatsapp(): Promise<void> {
  const rand = rng(19);
  const vocab = vocabulary(20_000, rand);
  const pick = zipf(vocab.length, rand);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-wa-root-'));
  const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-wa-data-')), 'data');
  try {
    const { kernel, sock } = await boot(root, dataDir);
    console.log(`\nwhatsapp: ${MESSAGES} messages in ${CHATS} chats through Baileys' event buffer`);
    const text = () => {
      const n = 3 + Math.floor(rand() * 20);
      const words: string[] = [];
      for (let i = 0; i < n; i++) words.push(vocab[pick()]!);
      return words.join(' ');
    };
    const message = (i: number): WAMessage => {
      const chat = Math.floor(rand() * CHATS);
      const jid = chatOf(chat);
      const fromMe = rand() < 0.3;
      return {
        key: {
          remoteJid: jid,
          fromMe,
          id: `B${i.toString(36).toUpperCase()}`,
          ...(chat >= 900 && !fromMe ? { participant: person(Math.floor(rand() * 900)) } : {}),
        },
        message: { conversation: i === 4242 ? 'the quarterly budget for the harbour office is final' : text() },
        messageTimestamp: T0 + Math.floor((i / MESSAGES) * 365 * 86_400),
      };
    };
    const chats = Array.from({ length: CHATS }, (_, i) => ({ id: chatOf(i), name: i < 900 ? `Person ${i}` : `Group ${i}` }));

    // 1. History sync batches.
    let t = process.hrtime.bigint();
    for (let start = 0; start < MESSAGES; start += BATCH) {
      const messages = Array.from({ length: Math.min(BATCH, MESSAGES - start) }, (_, k) => message(start + k));
      sock().ev.emit('messaging-history.set', { chats: start === 0 ? chats : [], contacts: [], messages, syncType: 2, isLatest: start === 0 });
      await settle(sock());
    }
    const buildMs = ms(t);
    console.log(
      `  history sync (batches of ${BATCH}): ${(buildMs / 1000).toFixed(1)} s, ${((MESSAGES / buildMs) * 1000).toFixed(0)} messages/s stored and indexed`,
    );

    // 2. Live messages, each its own buffered upsert as Baileys' upsertMessage makes it.
    t = process.hrtime.bigint();
    for (let i = 0; i < LIVE; i++) {
      const upsert = sock().ev.createBufferedFunction(async (m: WAMessage) => {
        sock().ev.emit('messages.upsert', { messages: [m], type: 'notify' });
        await Promise.resolve();
      });
      await upsert(message(MESSAGES + i));
      await settle(sock());
    }
    const liveMs = ms(t);
    console.log(`  live messages one by one: ${((LIVE / liveMs) * 1000).toFixed(0)} messages/s (${(liveMs / LIVE).toFixed(2)} ms each)`);

    // 3. Queries through the pipeline.
    const common = vocab[0]!;
    const rare = vocab[15_000]!;
    const cases: Array<[string, () => Record<string, unknown>]> = [
      ['common word', () => ({ query: common })],
      ['rare word', () => ({ query: rare })],
      ['two words', () => ({ query: `${vocab[pick()]!} ${vocab[pick()]!}` })],
      ['phrase', () => ({ query: `"${vocab[1]!} ${vocab[2]!}"` })],
      ['prefix', () => ({ query: `${vocab[pick()]!.slice(0, 3)}*` })],
      ['word + chat', () => ({ query: vocab[pick()]!, chat: chatOf(Math.floor(rand() * CHATS)) })],
      ['word + sender', () => ({ query: vocab[pick()]!, sender: `Person ${Math.floor(rand() * 900)}` })],
      ['word + dates (one month)', () => ({ query: vocab[pick()]!, after: '2025-03-01', before: '2025-04-01' })],
    ];
    console.log(`  whatsapp_search through the pipeline, limit 20, ${QUERIES} queries each (goal p50 < 10 ms):`);
    for (const [name, args] of cases) {
      const samples: number[] = [];
      for (let i = 0; i < QUERIES; i++) {
        const s = process.hrtime.bigint();
        await call(kernel, 'whatsapp_search', args());
        samples.push(ms(s));
      }
      samples.sort((a, b) => a - b);
      console.log(`    ${name.padEnd(26)} p50 ${percentile(samples, 50).toFixed(2).padStart(7)} ms   p99 ${percentile(samples, 99).toFixed(2).padStart(7)} ms`);
    }

    // 4. Relevance: the planted message first for its own words.
    const planted = (await call(kernel, 'whatsapp_search', { query: 'quarterly budget harbour' })) as { results: Array<{ id: string }> };
    const rank = planted.results.findIndex((r) => r.id === `B${(4242).toString(36).toUpperCase()}`);
    console.log(`  relevance: the planted message is result ${rank + 1} of ${planted.results.length} for "quarterly budget harbour"`);

    // 5. The other reads.
    for (const [name, tool, args] of [
      ['whatsapp_latest (20 chats)', 'whatsapp_latest', {}],
      ['whatsapp_messages (30, a group)', 'whatsapp_messages', { chat: group(950) }],
    ] as const) {
      const samples: number[] = [];
      for (let i = 0; i < 50; i++) {
        const s = process.hrtime.bigint();
        await call(kernel, tool, args);
        samples.push(ms(s));
      }
      samples.sort((a, b) => a - b);
      console.log(`  ${name}: p50 ${percentile(samples, 50).toFixed(2)} ms, p99 ${percentile(samples, 99).toFixed(2)} ms`);
    }
    await kernel.shutdown();
    const db = path.join(dataDir, 'packs-data', 'whatsapp', 'whatsapp.sqlite');
    const size = ['', '-wal'].reduce((n, suffix) => n + (fs.existsSync(db + suffix) ? fs.statSync(db + suffix).size : 0), 0);
    console.log(`  database on disk: ${(size / 1024 / 1024).toFixed(1)} MB for ${MESSAGES + LIVE} messages`);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
  }
}
