import * as path from 'node:path';
import type { WAMessage } from 'baileys';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import type { PackDefinition } from '../../../kernel/tools/tool-registry.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import type { ManualClock } from '../../../kernel/clock.js';
import type { Prompter } from '../../../kernel/permissions/prompter.js';
import { fakeMaker, msgId, type FakeSocket } from './fake-socket.js';

export const PLUGINS = path.resolve('plugins');

/** Each test's kernels are shut down when it ends (on PostgreSQL an open kernel holds connections). */
const open = new Set<Fixture>();
afterEach(async () => {
  for (const fx of [...open]) await fx.close();
  open.clear();
});

export interface WhatsAppFixture extends Fixture {
  call(tool: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** Runs `memo whatsapp <sub>`; what it prints is pushed to `out` as it goes. */
  command(sub: string, options?: Record<string, unknown>, signal?: AbortSignal, out?: unknown[]): Promise<{ code: number; out: unknown[] }>;
  /** Every socket the pack made, newest last. */
  sockets: FakeSocket[];
  socket(): FakeSocket;
  /** The next n sockets fail to be made (as a broken auth folder or library would). */
  failNextSockets(n: number): void;
  /** Starts `memo serve`'s services (the connection) and waits for the socket. */
  serve(): Promise<FakeSocket>;
  packData: string;
  restartWhatsApp(): Promise<WhatsAppFixture>;
}

/**
 * A real kernel with the whatsapp pack loaded from `plugins/`, and a host pack that offers a fake
 * socket maker under `whatsapp.socket` (the contribution point a host app uses for its own socket).
 */
export async function whatsappKernel(
  options: { prompter?: Prompter; root?: string; dataDir?: string; config?: Record<string, unknown>; alsoLoad?: string[]; clock?: ManualClock } = {},
): Promise<WhatsAppFixture> {
  const maker = fakeMaker();
  const host: PackDefinition = {
    id: 'fake-whatsapp-host',
    version: '1.0.0',
    tools: [],
    activate: (api) => api.provide('whatsapp.socket', maker.make),
  };
  const fx = makeKernel({
    packs: [host],
    ...(options.prompter ? { prompter: options.prompter } : {}),
    ...(options.root ? { root: options.root } : {}),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  open.add(fx);
  const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['whatsapp', ...(options.alsoLoad ?? [])] }]);
  const mine = statuses.find((s) => s.id === 'whatsapp');
  if (mine?.status !== 'loaded') throw new Error(`whatsapp did not load: ${mine?.error ?? 'not found'}`);
  if (options.config) fx.kernel.packs.setConfig('whatsapp', options.config);
  if (!options.prompter) fx.prompter.setFallback('allow-once');
  const command: WhatsAppFixture['command'] = async (sub, opts = {}, signal = new AbortController().signal, out: unknown[] = []) => {
    const s = fx.kernel.commands.get('whatsapp')?.command.subcommands.find((c) => c.name === sub);
    if (!s) throw new Error(`no memo whatsapp ${sub}`);
    const code = await s.run({
      args: {},
      options: opts,
      signal,
      invoke: (tool, a) => fx.kernel.invoke({ tool, args: a, caller: { kind: 'cli' } }),
      print: (v) => out.push(v),
      record: (change) => fx.kernel.admin.record({ ...change, by: 'cli' }),
    });
    return { code: typeof code === 'number' ? code : 0, out };
  };
  const wfx: WhatsAppFixture = Object.assign(fx, {
    call: (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent' as const } }),
    command,
    sockets: maker.sockets,
    socket: () => maker.last(),
    failNextSockets: (n: number) => maker.failNext(n),
    serve: async () => {
      const before = maker.sockets.length;
      await fx.kernel.start();
      await waitFor(() => maker.sockets.length > before, { what: 'the connection service to make a socket' });
      return maker.last();
    },
    packData: path.join(fx.dataDir, 'packs-data', 'whatsapp'),
    restartWhatsApp: async () => {
      await fx.kernel.shutdown();
      return whatsappKernel({ ...options, root: fx.root, dataDir: fx.dataDir });
    },
  });
  return wfx;
}

/**
 * Pairs the socket `memo whatsapp link` (or a test) is waiting on: Baileys' QR, the phone's
 * pair-success through Baileys' own pairing code, the 515 restart, and the new socket coming up.
 */
export async function pairPhone(fx: WhatsAppFixture): Promise<{ sock: FakeSocket; qr: string }> {
  const first = fx.socket();
  const count = fx.sockets.length;
  const qr = first.showQr();
  first.pair();
  await first.settle();
  await waitFor(() => fx.sockets.length > count, { what: 'the socket that follows the 515 restart' });
  const next = fx.socket();
  next.open();
  await next.settle();
  return { sock: next, qr };
}

/** Links through the real `memo whatsapp link` flow against the fake socket (the command stops its socket when done). */
export async function link(fx: WhatsAppFixture): Promise<void> {
  const count = fx.sockets.length;
  let ended: { code: number; out: unknown[] } | null = null;
  const linking = fx.command('link', { json: true, historyWait: '0' }).then((r) => (ended = r));
  // A command that ends before it opens a socket failed: say how, rather than wait for a socket that never comes.
  await waitFor(
    () => {
      if (ended && fx.sockets.length <= count) throw new Error(`memo whatsapp link ended before it opened a socket: ${JSON.stringify(ended)}`);
      return fx.sockets.length > count;
    },
    { what: 'the link command to open a socket' },
  );
  await pairPhone(fx);
  const r = await linking;
  if (r.code !== 0) throw new Error(`link failed: ${JSON.stringify(r.out)}`);
}

/** Links through the real `memo whatsapp link` flow against the fake socket; leaves the kernel serving with a fresh socket. */
export async function linkedKernel(options: Parameters<typeof whatsappKernel>[0] = {}): Promise<{ fx: WhatsAppFixture; sock: FakeSocket }> {
  const fx = await whatsappKernel(options);
  await link(fx);
  const sock = await fx.serve();
  sock.open();
  await sock.settle();
  return { fx, sock };
}

export function value(r: ToolResult): any {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.value;
}

export function error(r: ToolResult): { code: string; message: string; details?: any } {
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r.value).slice(0, 300)}`);
  return r.error;
}

/** A text message as Baileys hands it on after decryption. */
export function textMessage(
  chat: string,
  text: string,
  extra: { id?: string; fromMe?: boolean; participant?: string; pushName?: string; ts?: number; remoteJidAlt?: string; participantAlt?: string } = {},
): WAMessage {
  return {
    key: {
      remoteJid: chat,
      fromMe: extra.fromMe ?? false,
      id: extra.id ?? msgId(),
      ...(extra.participant ? { participant: extra.participant } : {}),
      ...(extra.remoteJidAlt ? { remoteJidAlt: extra.remoteJidAlt } : {}),
      ...(extra.participantAlt ? { participantAlt: extra.participantAlt } : {}),
    },
    message: { conversation: text },
    messageTimestamp: extra.ts ?? 1767268800,
    ...(extra.pushName ? { pushName: extra.pushName } : {}),
  };
}
