import * as fs from 'node:fs';
import * as path from 'node:path';
import { proto } from 'baileys';
import QRCode from 'qrcode';
import { adminActions } from '../../helpers/admin-lines.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { error, linkedKernel, pairPhone, textMessage, value, whatsappKernel, type WhatsAppFixture } from './helpers.js';

const mode = (p: string) => fs.statSync(p).mode & 0o777;

/** Runs `memo whatsapp link` until its socket exists; the command's outcome is `linking`. */
async function startLink(fx: WhatsAppFixture, options: Record<string, unknown> = {}) {
  const before = fx.sockets.length;
  const stop = new AbortController();
  const printed: unknown[] = [];
  const linking = fx.command('link', { historyWait: '0', ...options }, stop.signal, printed);
  await waitFor(() => fx.sockets.length > before, { what: 'memo whatsapp link to open a socket' });
  return { linking, stop, printed };
}

const SCAN = 'Scan with the phone: WhatsApp > Settings > Linked devices > Link a device. (A new code appears every ~20 s.)';
const RESTART = 'The connection dropped (WhatsApp asked for a restart, 515); reconnecting in 0 s.';

describe('memo whatsapp link|status|unlink', () => {
  test("link draws the QR Baileys builds from this device's keys, pairs through Baileys' own pairing code, and saves the credentials 0600", async () => {
    const fx = await whatsappKernel();
    const { linking } = await startLink(fx);
    const sock = fx.socket();
    const { qr } = await pairPhone(fx);
    const { code, out } = await linking;
    expect(code).toBe(0);
    const art = await QRCode.toString(qr, { type: 'terminal', small: true });
    expect(out).toEqual([
      `${art}\n${SCAN}`,
      RESTART,
      expect.stringMatching(/^Linked to WhatsApp as \+491700000001\. Receiving the recent history/),
      expect.stringMatching(/^History so far: 0 chats/),
    ]);
    expect(sock.ended).toBe(true);

    // The QR carries this device's public keys, the ones now saved: a phone that scans it pairs with them.
    const auth = path.join(fx.packData, 'auth');
    const creds = JSON.parse(fs.readFileSync(path.join(auth, 'creds.json'), 'utf8')) as {
      noiseKey: { public: { data: string } };
      advSecretKey: string;
      me: { id: string; lid: string };
      account: unknown;
    };
    expect(qr.split('#')[1]!.split(',')).toEqual([expect.any(String), creds.noiseKey.public.data, expect.any(String), creds.advSecretKey, expect.any(String)]);
    expect(creds.me).toEqual(expect.objectContaining({ id: '491700000001:7@s.whatsapp.net', lid: '90000000001:7@lid' }));
    expect(creds.account).toBeTruthy();
    expect(mode(auth)).toBe(0o700);
    const files = fs.readdirSync(auth);
    expect(files).toContain('creds.json');
    for (const f of files) expect(mode(path.join(auth, f))).toBe(0o600);
    const status = await fx.command('status', { json: true });
    expect(status.out[0]).toEqual({
      ok: true,
      result: { linked: true, account: { number: '+491700000001', name: null }, connection: null, history: { chats: 0, messages: 0, contacts: 0 } },
    });
  });

  test('link --phone asks Baileys for a pairing code and shows it instead of a QR', async () => {
    const fx = await whatsappKernel();
    const { linking } = await startLink(fx, { phone: '+49 170 0000001', json: true });
    const sock = fx.socket();
    // The code is asked for once the socket is ready to pair (when it offers its first QR).
    sock.showQr();
    await sock.settle();
    await waitFor(() => sock.pairingCodes.length > 0, { what: 'a pairing code request' });
    sock.pair();
    await sock.settle();
    await waitFor(() => fx.sockets.length === 2, { what: 'the socket after the restart' });
    fx.socket().open();
    await fx.socket().settle();
    const { code, out } = await linking;
    expect(code).toBe(0);
    expect(sock.pairingCodes).toEqual(['491700000001']);
    const saved = JSON.parse(fs.readFileSync(path.join(fx.packData, 'auth', 'creds.json'), 'utf8')) as { pairingCode: string };
    expect(out[0]).toEqual({ event: 'pairing-code', code: `${saved.pairingCode.slice(0, 4)}-${saved.pairingCode.slice(4)}` });
    expect(saved.pairingCode).toMatch(/^[0-9A-Z]{8}$/);
    expect(out).not.toContainEqual(expect.objectContaining({ event: 'qr' }));
    expect(out).toContainEqual(expect.objectContaining({ event: 'linked', number: '+491700000001' }));
  });

  test('a pair-success not signed for this device is refused by Baileys, and nothing is linked', async () => {
    const fx = await whatsappKernel();
    // No timer races the pairing on a busy machine: the user stops the command once the refusal shows.
    const { linking, stop, printed } = await startLink(fx, { json: true });
    const sock = fx.socket();
    sock.showQr();
    // Signed with another device's ADV secret: the HMAC check in Baileys' configureSuccessfulPairing fails.
    sock.pair({ advSecret: Buffer.alloc(32, 7).toString('base64') });
    await sock.settle();
    const refused = {
      event: 'connection',
      state: 'closed',
      detail: expect.stringMatching(/^The connection dropped \(the session is broken, 500\)/),
    };
    const shown = (line: unknown) => /^The connection dropped \(the session is broken, 500\)/.test(String((line as { detail?: unknown }).detail));
    await waitFor(() => printed.some(shown), { what: 'the refused pairing to be shown' });
    stop.abort();
    const { code, out } = await linking;
    expect(code).toBe(1);
    expect(out).toContainEqual(refused);
    expect(out.at(-1)).toEqual({
      ok: false,
      error: {
        code: 'TOOL_FAILED',
        message: expect.stringMatching(/^Stopped before a phone paired \(last: The connection dropped \(the session is broken, 500\).*Nothing was linked/),
      },
    });
    expect((await fx.command('status', { json: true })).out[0]).toEqual({ ok: true, result: expect.objectContaining({ linked: false }) });
  });

  test('link waits for the first history sync and keeps it', async () => {
    const fx = await whatsappKernel();
    const linking = fx.command('link', { json: true });
    await waitFor(() => fx.sockets.length > 0, { what: 'a socket' });
    const { sock } = await pairPhone(fx);
    await sock.historySync({
      syncType: proto.HistorySync.HistorySyncType.INITIAL_BOOTSTRAP,
      conversations: [{ id: '491701111111@s.whatsapp.net', name: 'Alice', messages: [{ message: textMessage('491701111111@s.whatsapp.net', 'welcome') }] }],
    });
    sock.emit('messaging-history.status', { syncType: proto.HistorySync.HistorySyncType.INITIAL_BOOTSTRAP, status: 'complete', explicit: true });
    await sock.settle();
    const { code, out } = await linking;
    expect(code).toBe(0);
    expect(out.at(-1)).toEqual({ ok: true, result: expect.objectContaining({ linked: true, history: { chats: 1, messages: 1, contacts: 1 } }) });
  });

  test('link refuses while a phone is linked; it gives up, linking nothing, when no phone pairs in time', async () => {
    const { fx } = await linkedKernel();
    const again = await fx.command('link', { json: true });
    expect(again.code).toBe(1);
    expect(again.out[0]).toEqual({ ok: false, error: { code: 'CONFLICT', message: expect.stringMatching(/already linked.*memo whatsapp unlink/) } });

    const fresh = await whatsappKernel();
    const { linking } = await startLink(fresh, { timeout: '0.05', json: true });
    const { code, out } = await linking;
    expect(code).toBe(1);
    expect(out.at(-1)).toEqual({ ok: false, error: { code: 'TOOL_FAILED', message: expect.stringMatching(/No phone paired.*Nothing was linked/) } });
    expect(
      fs.existsSync(path.join(fresh.packData, 'auth', 'creds.json')) && JSON.parse(fs.readFileSync(path.join(fresh.packData, 'auth', 'creds.json'), 'utf8')).me,
    ).toBeFalsy();
  });

  test('memo serve starts the connection only when a phone is linked, and stops it on shutdown', async () => {
    const fx = await whatsappKernel();
    await fx.kernel.start();
    expect(fx.sockets).toHaveLength(0);
    expect(fx.logger.lines.some((l) => /no phone linked/.test(l.message))).toBe(true);
    const { fx: linked, sock } = await linkedKernel();
    expect(sock.ended).toBe(false);
    await linked.close();
    expect(sock.ended).toBe(true);
  });

  test('a dropped connection reconnects with a new socket, and sending works again', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.receive(textMessage('491701111111@s.whatsapp.net', 'hi', { pushName: 'Alice' }));
    const count = fx.sockets.length;
    sock.close(428);
    await sock.settle();
    await waitFor(() => fx.sockets.length > count, { what: 'a reconnect' });
    const next = fx.socket();
    next.open();
    await next.settle();
    value(await fx.call('whatsapp_send', { to: 'Alice', text: 'back online' }));
    expect(next.sent).toEqual([{ jid: '491701111111@s.whatsapp.net', content: { text: 'back online' } }]);
  });

  test('when the phone unlinks the device, the credentials go and the tools say to link again', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.receive(textMessage('491701111111@s.whatsapp.net', 'hi', { pushName: 'Alice' }));
    sock.close(401);
    await sock.settle();
    expect(fs.existsSync(path.join(fx.packData, 'auth'))).toBe(false);
    expect(error(await fx.call('whatsapp_send', { to: 'Alice', text: 'hi' })).message).toMatch(/memo whatsapp link/);
    const status = await fx.command('status', { json: true });
    expect(status.out[0]).toEqual({
      ok: true,
      result: expect.objectContaining({ linked: false, connection: expect.objectContaining({ state: 'logged-out' }) }),
    });
    // The history stays readable.
    expect(value(await fx.call('whatsapp_latest', {})).chats).toHaveLength(1);
  });

  test('unlink logs the device out of WhatsApp and deletes the credentials; the history stays', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.receive(textMessage('491701111111@s.whatsapp.net', 'hi', { pushName: 'Alice' }));
    const { code, out } = await fx.command('unlink', { json: true });
    expect(code).toBe(0);
    expect(out[0]).toEqual({ ok: true, result: { unlinked: true, loggedOut: true } });
    expect(sock.loggedOut).toBe(true);
    expect(fs.existsSync(path.join(fx.packData, 'auth'))).toBe(false);
    expect(value(await fx.call('whatsapp_latest', {})).chats).toHaveLength(1);
    expect((await fx.command('unlink', { json: true })).code).toBe(1);
    // On the audit trail: the one unlink that was made (the second had nothing to unlink).
    expect(adminActions(fx.kernel).filter((a) => a.startsWith('whatsapp.unlink'))).toEqual(['whatsapp.unlink - by cli']);
  });

  test('no tool can read the credentials, even with the data folder inside the workspace', async () => {
    const root = tempDir('memo-wa-root-');
    const { fx } = await linkedKernel({ root, dataDir: path.join(root, 'data'), alsoLoad: ['fs-tools', 'shell'] });
    const creds = 'data/packs-data/whatsapp/auth/creds.json';
    expect(fs.existsSync(path.join(root, creds))).toBe(true);
    for (const [tool, args] of [
      ['read_file', { path: creds }],
      ['list_directory', { path: 'data/packs-data/whatsapp/auth' }],
      ['search_files', { pattern: 'data/**/creds.json' }],
      ['run_command', { command: `cat ${creds}` }],
    ] as const) {
      const r = await fx.call(tool, args);
      const text = JSON.stringify(r);
      if (r.ok) expect(text).not.toMatch(/auth\/creds|noiseKey|signedIdentityKey/);
      else expect(text).not.toMatch(/noiseKey|signedIdentityKey|private/);
    }
    expect(error(await fx.call('read_file', { path: creds })).code).toBe('PATH_PROTECTED');
  });

  test('memo serve picks up a phone linked while it runs, once the link has finished', async () => {
    const fx = await whatsappKernel();
    await fx.kernel.start();
    expect(fx.sockets).toHaveLength(0);
    const { linking } = await startLink(fx, { json: true });
    await pairPhone(fx);
    expect((await linking).code).toBe(0);
    await waitFor(() => fx.sockets.length === 3, { what: 'memo serve to open its own socket after the link' });
    fx.socket().open();
    await fx.socket().settle();
    expect((await fx.command('status', { json: true })).out[0]).toEqual({ ok: true, result: expect.objectContaining({ connection: { state: 'open' } }) });
  });

  test('a link running in another process holds memo serve and a second link back', async () => {
    const { fx } = await linkedKernel();
    const again = await fx.restartWhatsApp();
    // The parent of this test process stands in for a `memo whatsapp link` still running elsewhere.
    fs.writeFileSync(path.join(again.packData, 'linking.pid'), String(process.ppid));
    await again.kernel.start();
    expect(again.sockets).toHaveLength(0);
    fs.rmSync(path.join(again.packData, 'auth'), { recursive: true });
    const second = await again.command('link', { json: true });
    expect(second.out[0]).toEqual({ ok: false, error: { code: 'CONFLICT', message: expect.stringMatching(/Another `memo whatsapp link` is running/) } });
  });

  test('memo serve retries a connection that failed to start, and reconnects after the phone links again', async () => {
    const { fx } = await linkedKernel();
    const again = await fx.restartWhatsApp();
    again.failNextSockets(1);
    await again.kernel.start();
    expect(again.logger.lines.some((l) => l.level === 'warn' && /could not start the connection: the socket could not be made/.test(l.message))).toBe(true);
    await waitFor(() => again.sockets.length === 1, { what: 'the retried connection' });
    again.socket().open();
    await again.socket().settle();
    // The phone drops the device; the person links again from another terminal (here, the same process).
    again.socket().close(401);
    await again.socket().settle();
    expect((await again.command('status', { json: true })).out[0]).toEqual({ ok: true, result: expect.objectContaining({ linked: false }) });
    const { linking } = await startLink(again, { json: true });
    await pairPhone(again);
    expect((await linking).code).toBe(0);
    await waitFor(() => again.sockets.length === 4, { what: 'memo serve to connect on the new link' });
  });
});
