/**
 * The WhatsApp connection's owner lease on PostgreSQL: two instances (two kernels, two data folders,
 * each linked as a device of its own, one database) never both connect; the one without the lease
 * answers reads from the shared history and says which instance sends; a clean stop hands the
 * connection over at once, an owner killed with SIGKILL (a real process holding the lease) hands it
 * over once its lease runs out; and instances racing for the lease never both win it. An owner cut
 * off from the database (a relay between it and the server that stops passing bytes, while the other
 * instance still reaches the server; or the whole server hung) stops its socket while its lease is
 * still unexpired, so before anyone else can claim it, and never two sockets are open at once.
 */
import { spawn } from 'node:child_process';
import * as net from 'node:net';
import pgDriver from 'pg';
import * as path from 'node:path';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { instanceId } from '../../kernel/storage/instance-id.js';
import { openPackDatabase } from '../../kernel/storage/pack-database.js';
import { OwnerLease } from '../../plugins/whatsapp/lease.js';
import { ENTITIES, MIGRATIONS } from '../../plugins/whatsapp/schema.js';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../helpers/wait.js';
import type { FakeSocket } from '../plugins/whatsapp/fake-socket.js';
import { error, link, textMessage, value, whatsappKernel, type WhatsAppFixture } from '../plugins/whatsapp/helpers.js';
import { onPostgres } from './on-postgres.js';

const pg = onPostgres(['pack_whatsapp__whatsapp']);

/**
 * A TCP relay on loopback to the test server: the owner's own path to the database. `cut()` stops it
 * passing bytes either way (connections stay open, new ones are accepted but go nowhere), as a network
 * that drops packets; `heal()` lets everything through again.
 */
async function relay(port: number) {
  let cut = false;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const waiting: Array<() => void> = [];
  const server = net.createServer((inbound) => {
    const start = () => {
      const outbound = net.connect(port, '127.0.0.1');
      const pair: [net.Socket, net.Socket] = [inbound, outbound];
      pairs.add(pair);
      inbound.pipe(outbound);
      outbound.pipe(inbound);
      const done = () => {
        pairs.delete(pair);
        inbound.destroy();
        outbound.destroy();
      };
      inbound.on('error', done).on('close', done);
      outbound.on('error', done).on('close', done);
    };
    inbound.on('error', () => inbound.destroy());
    if (cut) {
      inbound.pause();
      waiting.push(start);
    } else start();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      cut = true;
      for (const [a, b] of pairs) {
        a.unpipe(b);
        b.unpipe(a);
        a.pause();
        b.pause();
      }
    },
    heal() {
      cut = false;
      for (const [a, b] of pairs) {
        a.pipe(b);
        b.pipe(a);
        a.resume();
        b.resume();
      }
      for (const start of waiting.splice(0)) start();
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * Watches both instances' fake sockets: each event in order, whether two were ever open (made and not
 * ended) at once, and, the moment the owner's socket ends, the lease row as the database sees it then
 * (asked on a connection of its own, after the end: if the lease was still unexpired, nobody could
 * have claimed it before that socket stopped).
 */
function watchSockets(fxs: Record<string, WhatsAppFixture>, observer: pgDriver.Client) {
  const events: string[] = [];
  let twoOpen = false;
  let watching = true;
  const probes: Array<Promise<Array<{ instance: string; alive: boolean }>>> = [];
  const open = () => Object.values(fxs).flatMap((fx) => fx.sockets.filter((s) => !s.ended));
  for (const [name, fx] of Object.entries(fxs)) {
    const watch = (sock: FakeSocket) => {
      const end = sock.end.bind(sock);
      sock.end = () => {
        if (!sock.ended && watching) {
          events.push(`${name} socket ended`);
          probes.push(observer.query(`SELECT instance, expires_at > clock_timestamp() AS alive FROM pack_whatsapp__whatsapp.wa_owner`).then((r) => r.rows));
        }
        end();
      };
    };
    fx.sockets.forEach(watch);
    const push = fx.sockets.push.bind(fx.sockets);
    fx.sockets.push = (...made: FakeSocket[]) => {
      if (open().length > 0) twoOpen = true;
      events.push(`${name} socket made`);
      made.forEach(watch);
      return push(...made);
    };
  }
  return { events, probes, twoOpen: () => twoOpen, stop: () => (watching = false) };
}
const ALICE = '491701111111@s.whatsapp.net';
/** Short leases, so a takeover after a death takes seconds (ticks run every third of it). */
const LEASE_SECONDS = 2;

async function linkedInstance(): Promise<WhatsAppFixture> {
  const fx = await whatsappKernel({ config: { ownerLeaseSeconds: LEASE_SECONDS } });
  await link(fx);
  return fx;
}

async function openShared() {
  return openPackDatabase(
    tempDir(),
    { name: 'whatsapp', entities: ENTITIES, migrations: MIGRATIONS, portable: true },
    { url: DatabaseUrl.parse(pg.url()), packId: 'whatsapp' },
  );
}

/** A few of the non-owner's ticks (each a third of the lease). */
const ticks = (n: number) => new Promise((r) => setTimeout(r, (n * LEASE_SECONDS * 1000) / 3 + 100));

describe('the WhatsApp connection has one owner instance (PostgreSQL lease)', () => {
  it('the second instance leaves the connection to the first, reads the shared history, names the owner when asked to send, and takes over at once after a clean stop', async () => {
    const a = await linkedInstance();
    const b = await linkedInstance();
    const idA = instanceId(a.dataDir);
    const idB = instanceId(b.dataDir);
    expect(idA).not.toBe(idB);

    const sockA = await a.serve();
    sockA.open();
    await sockA.settle();
    await sockA.receive(textMessage(ALICE, 'the keys are under the mat', { id: 'K1', pushName: 'Alice' }));

    const linkedSockets = b.sockets.length;
    await b.kernel.start();
    await ticks(3);
    // B made no socket: A holds the lease.
    expect(b.sockets.length).toBe(linkedSockets);
    const read = value(await b.call('whatsapp_messages', { chat: ALICE }));
    expect(read.messages.map((m: { id: string; text: string }) => [m.id, m.text])).toEqual([['K1', 'the keys are under the mat']]);
    expect(read.connection).toContain(`owned by the Memo instance ${idA}`);
    expect(value(await b.call('whatsapp_search', { query: 'mat' })).results.map((r: { id: string }) => r.id)).toEqual(['K1']);
    const refused = error(await b.call('whatsapp_send', { to: ALICE, text: 'hi' }));
    expect(refused.code).toBe('TOOL_FAILED');
    expect(refused.message).toContain(`owned by the Memo instance ${idA}, not this one (${idB})`);
    expect(refused.message).toContain('Nothing was sent');

    // A stops cleanly: it gives the lease up, and B connects on its next tick, not after the lease would have run out.
    await a.close();
    await waitFor(() => b.sockets.length > linkedSockets, { what: 'B to connect after A stopped' });
    const sockB = b.socket();
    sockB.open();
    await sockB.settle();
    value(await b.call('whatsapp_send', { to: ALICE, text: 'got it' }));
    expect(sockB.sent).toEqual([{ jid: ALICE, content: { text: 'got it' } }]);
    const ds = await openShared();
    try {
      expect(await new OwnerLease(ds, 'observer', 1000).holder()).toMatchObject({ instance: idB });
    } finally {
      await ds.destroy();
    }
  });

  it('an owner killed with SIGKILL keeps the connection from nobody for longer than its lease: the other instance takes over once it runs out', async () => {
    requireFreshBuild();
    // A real process holds the lease with the pack's own code, renewing it, as a serving instance does.
    const dist = (p: string) => JSON.stringify(path.resolve('dist', p));
    const script = `
      import { openPackDatabase } from ${dist('kernel/storage/pack-database.js')};
      import { DatabaseUrl } from ${dist('kernel/storage/database-url.js')};
      import { ENTITIES, MIGRATIONS } from ${dist('plugins/whatsapp/schema.js')};
      import { OwnerLease } from ${dist('plugins/whatsapp/lease.js')};
      const ds = await openPackDatabase(process.env.DIR, { name: 'whatsapp', entities: ENTITIES, migrations: MIGRATIONS, portable: true },
        { url: DatabaseUrl.parse(process.env.URL), packId: 'whatsapp' });
      const lease = new OwnerLease(ds, 'doomed', ${LEASE_SECONDS * 1000});
      const renew = async () => console.log((await lease.claim()).owned ? 'owner' : 'not owner');
      await renew();
      setInterval(renew, ${(LEASE_SECONDS * 1000) / 3});`;
    const child = killWhenDone(
      spawn(process.execPath, ['--input-type=module', '-e', script], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, URL: pg.url(), DIR: tempDir() },
      }),
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(() => out.includes('owner\n'), { what: `the child to take the lease (${out})`, timeoutMs: SPAWN_TIMEOUT_MS });
    expect(out).not.toContain('not owner');

    const b = await linkedInstance();
    const linkedSockets = b.sockets.length;
    await b.kernel.start();
    await ticks(6);
    expect(b.sockets.length).toBe(linkedSockets);
    expect(error(await b.call('whatsapp_send', { to: ALICE, text: 'hi' })).message).toContain('owned by the Memo instance doomed');

    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // No clean release: the row stays until its time runs out, then B's next tick takes it.
    await waitFor(() => b.sockets.length > linkedSockets, { what: 'B to take over after the owner died' });
    const ds = await openShared();
    try {
      expect(await new OwnerLease(ds, 'observer', 1000).holder()).toMatchObject({ instance: instanceId(b.dataDir) });
    } finally {
      await ds.destroy();
    }
  });

  it('an owner whose path to the database is cut, while the other instance still reaches it, stops its socket while its lease is unexpired, and the other takes over after; never two sockets open', async () => {
    const path_ = await relay(pg.server().port);
    const observer = new pgDriver.Client({ connectionString: pg.url() });
    await observer.connect();
    const kernels: WhatsAppFixture[] = [];
    try {
      // A reaches the database only through the relay; B directly.
      const direct = process.env.MEMO_DATABASE_URL!;
      const viaRelay = new URL(direct);
      viaRelay.port = String(path_.port);
      process.env.MEMO_DATABASE_URL = viaRelay.toString();
      const a = await linkedInstance();
      process.env.MEMO_DATABASE_URL = direct;
      const b = await linkedInstance();
      kernels.push(a, b);
      const idA = instanceId(a.dataDir);
      const sockA = await a.serve();
      sockA.open();
      await sockA.settle();
      const linkedSocketsB = b.sockets.length;
      await b.kernel.start();
      await ticks(3);
      expect(b.sockets.length).toBe(linkedSocketsB);

      const seen = watchSockets({ A: a, B: b }, observer);
      const madeByA = a.sockets.length;
      path_.cut();
      await waitFor(() => b.sockets.length > linkedSocketsB, { what: 'B to take over once A was cut off' });
      // A stopped first, and when it had, its own lease was still unexpired: B could not have claimed it yet.
      expect(seen.events).toEqual(['A socket ended', 'B socket made']);
      expect(await Promise.all(seen.probes)).toEqual([[{ instance: idA, alive: true }]]);
      expect(seen.twoOpen()).toBe(false);
      expect(a.sockets.length).toBe(madeByA);

      // Its path back, A finds B holding the lease and makes no socket; its renewals never hung.
      path_.heal();
      await ticks(3);
      expect(a.sockets.length).toBe(madeByA);
      expect(seen.twoOpen()).toBe(false);
      expect((await observer.query(`SELECT instance FROM pack_whatsapp__whatsapp.wa_owner`)).rows).toEqual([{ instance: instanceId(b.dataDir) }]);
      seen.stop();
    } finally {
      // The kernels stop first (A's connections through the relay end cleanly), then the relay.
      path_.heal();
      for (const fx of kernels) await fx.close();
      await observer.end();
      await path_.close();
    }
  });

  it('an owner whose database hangs altogether stops its socket before its lease could run out, and after the hang exactly one instance holds the lease and the socket', async () => {
    const observer = new pgDriver.Client({ connectionString: pg.url() });
    await observer.connect();
    const a = await linkedInstance();
    const b = await linkedInstance();
    const idA = instanceId(a.dataDir);
    const sockA = await a.serve();
    sockA.open();
    await sockA.settle();
    const linkedSocketsB = b.sockets.length;
    await b.kernel.start();
    await ticks(3);
    expect(b.sockets.length).toBe(linkedSocketsB);
    expect((await observer.query(`SELECT instance FROM pack_whatsapp__whatsapp.wa_owner`)).rows).toEqual([{ instance: idA }]);

    const seen = watchSockets({ A: a, B: b }, observer);
    pg.server().freeze();
    try {
      await waitFor(() => sockA.ended, { what: 'A to stop its socket while the database hangs' });
      expect(seen.events).toEqual(['A socket ended']);
    } finally {
      pg.server().thaw();
    }
    // (The probe sent as A stopped ran only after the thaw, so it says nothing about the order here:
    // while the server hung nobody could claim at all.)
    await Promise.all(seen.probes);
    await waitFor(() => seen.events.length > 1, { what: 'an instance to connect again after the hang' });
    await ticks(3);
    expect(seen.twoOpen()).toBe(false);
    const open = { A: a.sockets.filter((s) => !s.ended).length, B: b.sockets.filter((s) => !s.ended).length };
    expect(open.A + open.B).toBe(1);
    const holder = (await observer.query(`SELECT instance FROM pack_whatsapp__whatsapp.wa_owner`)).rows[0]?.instance;
    expect(holder).toBe(open.A ? idA : instanceId(b.dataDir));
    seen.stop();
    await observer.end();
  });

  it('instances racing for a free or expired lease never both win it', async () => {
    const sources = await Promise.all(Array.from({ length: 4 }, () => openShared()));
    try {
      const leases = sources.flatMap((ds, i) => [0, 1].map((j) => new OwnerLease(ds, `racer-${i}-${j}`, 60_000)));
      const winners: string[] = [];
      for (let round = 0; round < 15; round++) {
        // Free (no row) in the first round, expired in the others.
        if (round > 0) await sources[0]!.query(`UPDATE wa_owner SET expires_at = clock_timestamp() - interval '1 second'`);
        const won = (await Promise.all(leases.map((l) => l.claim()))).map((c) => c.owned);
        expect(won.filter(Boolean)).toHaveLength(1);
        const winner = leases[won.indexOf(true)]!;
        winners.push(winner.instance);
        // The winner renews; the others still cannot take it while it is unexpired.
        expect((await Promise.all(leases.map((l) => l.claim()))).map((c) => c.owned)).toEqual(leases.map((l) => l === winner));
        expect((await winner.holder())?.instance).toBe(winner.instance);
      }
      // Released, it is free for the next claimant at once.
      const last = leases.find((l) => l.instance === winners.at(-1))!;
      await last.release();
      expect(await last.holder()).toBeNull();
      const next = leases.find((l) => l !== last)!;
      expect((await next.claim()).owned).toBe(true);
    } finally {
      await Promise.all(sources.map((ds) => ds.destroy()));
    }
  });
});
