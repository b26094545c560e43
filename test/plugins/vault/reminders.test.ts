import * as fs from 'node:fs';
import * as path from 'node:path';
import { ManualClock } from '../../../kernel/clock.js';
import { waitFor } from '../../helpers/wait.js';
import { linkedKernel, type WhatsAppFixture } from '../whatsapp/helpers.js';
import { ME } from '../whatsapp/fake-socket.js';
import { bridgeRefusal, planningSql, reopenVault, value, vaultKernel, type VaultFixture } from './helpers.js';
import type { ReminderNotice, VaultReminders } from '../../../plugins/vault/reminder-delivery.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

/** A fake clock that starts at this machine's time: remind-at times are checked against the real clock to be in the future. */
const clockNow = () => new ManualClock(Math.ceil(Date.now() / 1000) * 1000);
const at = (clock: ManualClock, ms: number) => new Date(clock.now() + ms).toISOString();

const bridge = (fx: { call(tool: string, args: Record<string, unknown>): Promise<ToolResult> }) => ({
  read: async (operation: string, args: unknown[] = []) => value(await fx.call('vault_desktop_read', { operation, args })),
  write: async (operation: string, args: unknown[] = []) => {
    const v = value(await fx.call('vault_desktop_write', { operation, args }));
    if (v.success !== true) throw new Error(`${operation} answered ${JSON.stringify(v)}`);
    return v;
  },
  refused: async (operation: string, args: unknown[] = []) => bridgeRefusal(await fx.call('vault_desktop_write', { operation, args })),
});

/** The id vault_add_to_inbox gives its item. */
const inboxId = (v: { id?: string; item?: { id: string } }) => v.item?.id ?? v.id;

/** Waits until `n` deliveries are recorded and finished (none still `delivering`). */
async function delivered(fx: { call(tool: string, args: Record<string, unknown>): Promise<ToolResult> }, n: number, what: string): Promise<void> {
  await waitFor(
    async () => {
      const h = (await bridge(fx).read('reminders.history')).deliveries as Array<{ status: string }>;
      return h.length === n && h.every((d) => d.status !== 'delivering');
    },
    { what },
  );
}

const service = (fx: { kernel: { shared: { lookup<T>(token: string): T | undefined } } }) => fx.kernel.shared.lookup<VaultReminders>('vault.reminders')!;

describe('vault reminders through the desktop bridge', () => {
  let fx: VaultFixture;
  let clock: ManualClock;
  beforeEach(async () => {
    clock = clockNow();
    fx = await vaultKernel({ clock, files: { 'Plan.md': '# Plan\n' } });
  });
  afterEach(async () => fx.close());

  it('creates a reminder about a task named by its title and lists it, with inbox reminders, soonest first', async () => {
    const b = bridge(fx);
    value(await fx.call('vault_create_task', { title: 'Call the bank' }));
    const item = value(await fx.call('vault_add_to_inbox', { title: 'Read the article' }));
    const made = await b.write('reminders.create', [
      { title: 'Ring them', remindAt: at(clock, 2 * HOUR), note: 'ask about fees', itemType: 'task', itemId: 'call the bank' },
    ]);
    expect(made).toMatchObject({ success: true, reminder: { title: 'Ring them', note: 'ask about fees', item: { type: 'task' }, delivered: null } });
    expect(fx.prompter.asked.at(-1)!.preview!.text).toContain('about: (not set) -> task Call the bank');
    await b.write('inbox.convertToReminder', [{ itemId: inboxId(item), remindAt: at(clock, HOUR) }]);
    const { reminders } = await b.read('reminders.list');
    expect(reminders.map((r: { source: string; title: string }) => [r.source, r.title])).toEqual([
      ['inbox', 'Read the article'],
      ['reminder', 'Ring them'],
    ]);
  });

  it('asks back a time in words, refuses a past time, an unknown item and a half-given item before anyone is asked', async () => {
    const b = bridge(fx);
    fx.prompter.asked.length = 0;
    expect((await b.refused('reminders.create', [{ title: 'x', remindAt: 'tomorrow 9am' }])).message).toMatch(/time in words, which is not guessed/);
    expect((await b.refused('reminders.create', [{ title: 'x', remindAt: '2020-01-01T09:00:00Z' }])).message).toMatch(/is not in the future/);
    expect(await b.refused('reminders.create', [{ title: 'x', remindAt: at(clock, HOUR), itemType: 'task', itemId: 'nope' }])).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect((await b.refused('reminders.create', [{ title: 'x', remindAt: at(clock, HOUR), itemType: 'task' }])).message).toMatch(/together/);
    expect(await b.refused('reminders.update', [{ id: 'nope', title: 'y' }])).toMatchObject({ code: 'NOT_FOUND' });
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('changes a reminder with a field preview and deletes one only after asking, every time', async () => {
    const b = bridge(fx);
    const { reminder } = await b.write('reminders.create', [{ title: 'Water plants', remindAt: at(clock, HOUR) }]);
    const later = at(clock, 3 * HOUR);
    const r = await b.write('reminders.update', [{ id: reminder.id, remindAt: later }]);
    expect(r).toMatchObject({ reminder: { remind_at: later }, changed: ['remind_at'] });
    expect(fx.prompter.asked.at(-1)!.preview!.text).toContain(`remind_at: ${reminder.remind_at} -> ${later}`);
    fx.prompter.asked.length = 0;
    expect(await b.write('reminders.delete', [{ id: reminder.id }])).toMatchObject({ deleted: { title: 'Water plants' } });
    expect(fx.prompter.asked).toHaveLength(1);
    expect(fx.prompter.asked[0]!.preview).toMatchObject({ kind: 'delete', text: expect.stringContaining('It will not remind') });
    expect((await b.read('reminders.list')).count).toBe(0);
  });
});

describe('reminders that remind', () => {
  let fx: VaultFixture;
  let clock: ManualClock;
  beforeEach(async () => {
    clock = clockNow();
    fx = await vaultKernel({ clock, files: { 'Plan.md': '# Plan\n' } });
  });
  afterEach(async () => fx.close());

  /** Moves the fake clock and waits for the look that falls due (if any) to finish. */
  const advance = async (f: VaultFixture, ms: number) => {
    f.clock.advance(ms);
    await service(f).idle();
  };
  const history = async (f: VaultFixture) => (await bridge(f).read('reminders.history')).deliveries as ReminderNotice[];

  it('delivers a reminder that falls due while memo serve runs once, to the console, and keeps it shown until dismissed', async () => {
    const b = bridge(fx);
    await b.write('reminders.create', [{ title: 'Stand-up', remindAt: at(clock, HOUR), note: 'room 4' }]);
    const seen: ReminderNotice[] = [];
    const stop = service(fx).subscribe((n) => seen.push(n));
    await fx.kernel.start();
    await advance(fx, HOUR - MIN);
    expect(seen).toHaveLength(0);
    await advance(fx, MIN);
    await waitFor(() => seen.length === 1, { what: 'the reminder to be delivered' });
    expect(seen[0]).toMatchObject({
      title: 'Stand-up',
      note: 'room 4',
      status: 'delivered',
      late_minutes: 0,
      channels: [{ channel: 'console', outcome: 'shown' }],
    });
    await advance(fx, 2 * HOUR);
    await advance(fx, 2 * HOUR);
    expect(seen).toHaveLength(1);
    expect(await history(fx)).toHaveLength(1);
    expect((await b.read('reminders.list')).count).toBe(0);
    expect((await b.read('reminders.list', [{ includeDelivered: true }])).reminders[0].delivered).toMatchObject({ status: 'delivered' });
    const unseen = await service(fx).unseen();
    expect(unseen.map((n) => n.title)).toEqual(['Stand-up']);
    expect(await service(fx).dismiss(unseen[0]!.id)).toBe(true);
    expect(await service(fx).dismiss(unseen[0]!.id)).toBe(false);
    expect(await service(fx).unseen()).toEqual([]);
    stop();
  });

  it('delivers a reminder that fell due while memo serve was stopped once when it starts again, marked late, and never again after another restart', async () => {
    const b = bridge(fx);
    await b.write('reminders.create', [{ title: 'Pay rent', remindAt: at(clock, HOUR) }]);
    await b.write('inbox.convertToReminder', [
      { itemId: inboxId(value(await fx.call('vault_add_to_inbox', { title: 'Reply to Sam' }))), remindAt: at(clock, 2 * HOUR) },
    ]);
    await fx.kernel.shutdown();
    clock.advance(3 * HOUR);
    let again = await reopenVault(fx);
    await again.kernel.start();
    await delivered(again, 2, 'both missed reminders to be delivered');
    const missed = await history(again);
    expect(missed.map((d) => [d.title, d.source, d.late_minutes])).toEqual(
      expect.arrayContaining([
        ['Pay rent', 'reminder', 120],
        ['Reply to Sam', 'inbox', 60],
      ]),
    );
    await again.kernel.shutdown();
    again = await reopenVault(again);
    await again.kernel.start();
    await service(again).idle();
    await advance(again, HOUR);
    expect(await history(again)).toHaveLength(2);
    fx = again;
  });

  it('reminds again at a new time once a delivered reminder is given one, and skips one whose task was done first', async () => {
    const b = bridge(fx);
    const { reminder } = await b.write('reminders.create', [{ title: 'Check oven', remindAt: at(clock, HOUR) }]);
    value(await fx.call('vault_create_task', { title: 'File taxes' }));
    await b.write('reminders.create', [{ title: 'Taxes due', remindAt: at(clock, 2 * HOUR), itemType: 'task', itemId: 'File taxes' }]);
    value(await fx.call('vault_complete_task', { task: 'File taxes' }));
    await fx.kernel.start();
    clock.advance(HOUR);
    await delivered(fx, 1, 'the first delivery');
    await b.write('reminders.update', [{ id: reminder.id, remindAt: at(clock, HOUR) }]);
    clock.advance(HOUR);
    await delivered(fx, 3, 'the second delivery and the skipped one');
    const h = await history(fx);
    expect(h.filter((d) => d.title === 'Check oven').map((d) => d.status)).toEqual(['delivered', 'delivered']);
    expect(h.find((d) => d.title === 'Taxes due')).toMatchObject({
      status: 'skipped',
      channels: [{ outcome: 'skipped', detail: expect.stringMatching(/task was done/) }],
    });
    expect((await service(fx).unseen()).map((n) => n.title)).toEqual(['Check oven', 'Check oven']);
  });

  it('reminds of an open task at its remind_at once, never of one done first, and gives a repeating task’s next occurrence its own', async () => {
    const b = bridge(fx);
    const call = value(await fx.call('vault_create_task', { title: 'Call the bank', description: 'about the card', remind_at: at(clock, HOUR) }));
    expect(call.remind_at).toBe(at(clock, HOUR));
    value(await fx.call('vault_create_task', { title: 'Buy stamps', remind_at: at(clock, HOUR) }));
    value(await fx.call('vault_complete_task', { task: 'Buy stamps' }));
    const day = new Date(clock.now()).toISOString().slice(0, 10);
    const weekly = value(
      await fx.call('vault_create_task', { title: 'Team notes', due_date: day, repeat_rule: 'FREQ=WEEKLY', remind_at: at(clock, 30 * MIN) }),
    );
    expect((await b.read('reminders.list')).reminders.map((r: { source: string; title: string }) => [r.source, r.title])).toEqual([
      ['task', 'Team notes'],
      ['task', 'Call the bank'],
    ]);
    expect((await fx.call('vault_create_task', { title: 'Too late', remind_at: '2020-01-01T00:00:00Z' })).ok).toBe(false);

    await fx.kernel.start();
    clock.advance(HOUR);
    await delivered(fx, 2, 'the two open tasks to remind');
    const h = await history(fx);
    expect(h.map((d) => [d.source, d.title, d.status]).sort()).toEqual([
      ['task', 'Call the bank', 'delivered'],
      ['task', 'Team notes', 'delivered'],
    ]);
    expect(h.find((d) => d.title === 'Call the bank')).toMatchObject({ note: 'about the card', item: { type: 'task' } });

    const done = value(await fx.call('vault_complete_task', { task: weekly.id }));
    const next = value(await fx.call('vault_get_task', { task: done.next_occurrence.id }));
    expect(next.remind_at).toBe(new Date(Date.parse(weekly.remind_at) + 7 * 24 * HOUR).toISOString());
    await advance(fx, 2 * HOUR);
    expect(await history(fx)).toHaveLength(2);
  });

  it('does not remind late of a task reopened after its reminder time passed: the time is cleared', async () => {
    value(await fx.call('vault_create_task', { title: 'Renew passport', remind_at: at(clock, HOUR) }));
    value(await fx.call('vault_complete_task', { task: 'Renew passport' }));
    await fx.kernel.start();
    await advance(fx, 2 * HOUR);
    const reopened = value(await fx.call('vault_uncomplete_task', { task: 'Renew passport' }));
    expect(reopened).toMatchObject({ remind_at: null, changed: expect.arrayContaining(['remind_at']) });
    await advance(fx, HOUR);
    expect(await history(fx)).toEqual([]);
  });

  it('marks a delivery cut short by a killed process as interrupted at the next start instead of sending it again', async () => {
    const b = bridge(fx);
    await b.write('reminders.create', [{ title: 'Half done', remindAt: at(clock, HOUR) }]);
    await fx.kernel.shutdown();
    // What a process killed between the record and the end leaves: the row, still delivering.
    const [r] = (await planningSql(fx, `SELECT id, remind_at FROM reminders`)) as Array<{ id: string; remind_at: string }>;
    await planningSql(
      fx,
      `INSERT INTO reminder_deliveries (id, source, source_id, remind_at, title, status, channels, delivered_at, seen_at, instance) VALUES ('d1', 'reminder', ?, ?, 'Half done', 'delivering', '[]', ?, NULL, 'gone')`,
      [r!.id, r!.remind_at, r!.remind_at],
    );
    clock.advance(2 * HOUR);
    const again = await reopenVault(fx);
    await again.kernel.start();
    await waitFor(async () => (await history(again))[0]?.status === 'interrupted', { what: 'the cut-short delivery to be marked interrupted' });
    expect(await history(again)).toHaveLength(1);
    fx = again;
  });
});

describe('reminders to WhatsApp', () => {
  let fx: WhatsAppFixture;
  afterEach(async () => fx?.close());

  it('sends a due reminder to the person’s own number only once they opted in, and records a failure without sending twice', async () => {
    const clock = clockNow();
    const linked = await linkedKernel({ alsoLoad: ['vault'], clock });
    fx = linked.fx;
    fs.mkdirSync(path.join(fx.root, 'vault'));
    fx.kernel.packs.setConfig('vault', { watch: false });
    const b = bridge(fx);
    await b.write('reminders.create', [{ title: 'Not opted in', remindAt: at(clock, HOUR) }]);
    const before = linked.sock.sent.length;
    clock.advance(HOUR);
    await delivered(fx, 1, 'the first delivery');
    expect((await b.read('reminders.history')).deliveries[0].channels).toEqual([{ channel: 'console', outcome: 'shown' }]);
    expect(linked.sock.sent.length).toBe(before);

    expect(await b.write('settings.setReminderSettings', [{ whatsapp: true }])).toMatchObject({ reminders: { whatsapp: true } });
    expect((await b.read('settings.getReminderSettings')).reminders).toEqual({ whatsapp: true });
    await b.write('reminders.create', [{ title: 'Take the pills', remindAt: at(clock, HOUR), note: 'with water' }]);
    clock.advance(HOUR);
    await delivered(fx, 2, 'the second delivery');
    const sent = linked.sock.sent.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.jid.split(/[:@]/)[0]).toBe(ME.split(/[:@]/)[0]);
    expect(sent[0]!.content.text).toBe('⏰ Reminder: Take the pills\nwith water');
    expect((await b.read('reminders.history')).deliveries[0]).toMatchObject({
      status: 'delivered',
      channels: [{ channel: 'console' }, { channel: 'whatsapp', outcome: 'sent' }],
    });

    // The connection down: the console still shows it, the failure is recorded, and nothing is sent later.
    linked.sock.close(428);
    await b.write('reminders.create', [{ title: 'While offline', remindAt: at(clock, HOUR) }]);
    clock.advance(HOUR);
    await delivered(fx, 3, 'the third delivery');
    expect((await b.read('reminders.history')).deliveries[0]).toMatchObject({
      status: 'partly',
      channels: [{ channel: 'console' }, { channel: 'whatsapp', outcome: 'failed' }],
    });
    expect(linked.sock.sent.slice(before)).toHaveLength(1);
  });
});
