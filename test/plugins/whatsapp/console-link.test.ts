/**
 * Linking a phone from the web console (console-link.ts): the WhatsApp panel's command opens the
 * connection in this process and answers with the pairing QR Baileys built, as a PNG; once the
 * phone pairs the connection stays open (the one memo serve keeps). A fake socket stands in for
 * WhatsApp's servers; Baileys' own QR and pairing code run for real.
 */
import QRCode from 'qrcode';
import { waitFor } from '../../helpers/wait.js';
import { whatsappKernel, type WhatsAppFixture } from './helpers.js';

describe('the WhatsApp link panel of the web console', () => {
  let fx: WhatsAppFixture;
  afterEach(async () => fx?.close());

  it('registers the link panel as a person command, not a tool', async () => {
    fx = await whatsappKernel();
    expect(fx.kernel.panels.get('whatsapp', 'link')).toMatchObject({ commands: [{ id: 'qr', command: 'whatsapp console-qr' }] });
    expect(
      fx.kernel.registry
        .list()
        .filter((t) => t.pack.id === 'whatsapp')
        .map((t) => t.spec.name),
    ).toEqual(['whatsapp_latest', 'whatsapp_messages', 'whatsapp_search', 'whatsapp_send']);
  });

  it('answers with the QR Baileys builds as a PNG, the same session on the next run, and "linked" once the phone pairs; the connection stays open', async () => {
    fx = await whatsappKernel();
    const first = fx.command('console-qr', { json: true });
    await waitFor(() => fx.sockets.length > 0, { what: 'the console link to open a socket' });
    const sock = fx.socket();
    const qr = sock.showQr();
    const shown = await first;
    expect(shown.code).toBe(0);
    const expected = await QRCode.toDataURL(qr, { margin: 2, scale: 6 });
    expect(shown.out[0]).toEqual({ ok: true, result: { linked: false, qr: expected, instructions: expect.stringMatching(/^Scan with the phone/) } });

    // A new QR comes every ~20 s: the next run shows the newest, on the same connection.
    const newer = sock.showQr('2@Zz8ref');
    const again = await fx.command('console-qr', { json: true });
    expect((again.out[0] as any).result.qr).toBe(await QRCode.toDataURL(newer, { margin: 2, scale: 6 }));
    expect(fx.sockets).toHaveLength(1);

    const count = fx.sockets.length;
    sock.pair();
    await sock.settle();
    await waitFor(() => fx.sockets.length > count, { what: 'the socket after the 515 restart' });
    const next = fx.socket();
    next.open();
    await next.settle();
    const linked = await fx.command('console-qr', { json: true });
    expect(linked.out[0]).toEqual({ ok: true, result: { linked: true, account: { number: '+491700000001', name: null }, connection: 'open' } });
    expect(next.ended).toBe(false);
  });

  it('closes the connection when no phone pairs within 3 minutes (by the kernel clock), and a later run starts afresh', async () => {
    fx = await whatsappKernel();
    const first = fx.command('console-qr', { json: true });
    await waitFor(() => fx.sockets.length > 0, { what: 'a socket' });
    fx.socket().showQr();
    expect((await first).code).toBe(0);
    fx.clock.advance(179_000);
    expect(fx.socket().ended).toBe(false);
    fx.clock.advance(1_000);
    await waitFor(() => fx.socket().ended, { what: 'the unpaired connection to close' });
    const again = fx.command('console-qr', { json: true });
    await waitFor(() => fx.sockets.length === 2, { what: 'a new socket' });
    fx.socket().showQr();
    expect((await again).code).toBe(0);
  });
});
