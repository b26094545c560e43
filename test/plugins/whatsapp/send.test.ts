import { proto } from 'baileys';
import { ScriptedPrompter } from '../../helpers/kernel-fixture.js';
import { shownPreview } from '../../helpers/shown-preview.js';
import { error, linkedKernel, textMessage, value, whatsappKernel } from './helpers.js';
import type { FakeSocket } from './fake-socket.js';
import type { WhatsAppFixture } from './helpers.js';

const ALICE = '491701111111@s.whatsapp.net';
const ALI_1 = '905321111111@s.whatsapp.net';
const ALI_2 = '905322222222@s.whatsapp.net';
const FAMILY = '120363000000000001@g.us';
const HIDDEN = '180000000000009@lid';
const T0 = 1767268800;

/** Alice, two people called Ali, a group, and someone WhatsApp shows only by a LID. */
async function seeded(options: Parameters<typeof linkedKernel>[0] = {}): Promise<{ fx: WhatsAppFixture; sock: FakeSocket }> {
  const { fx, sock } = await linkedKernel(options);
  await sock.historySync({
    syncType: proto.HistorySync.HistorySyncType.INITIAL_BOOTSTRAP,
    conversations: [
      { id: ALICE, name: 'Alice Weber', conversationTimestamp: T0 },
      { id: ALI_1, name: 'Ali Yılmaz', conversationTimestamp: T0 - 1 },
      { id: ALI_2, name: 'Ali Yilmaz', conversationTimestamp: T0 - 2 },
      { id: FAMILY, name: 'Family', conversationTimestamp: T0 - 3 },
    ],
  });
  await sock.receive(textMessage(HIDDEN, 'hello from a hidden number', { pushName: 'Zeynep', ts: T0 - 4 }));
  return { fx, sock };
}

const preview = (p: ScriptedPrompter, i = -1) => shownPreview(p.asked.at(i));

describe('whatsapp_send', () => {
  test('shows the resolved person with name and number and the exact text, then sends exactly that', async () => {
    const { fx, sock } = await seeded();
    const text = 'Running 10 min late — order for me?\nThanks!';
    const r = value(await fx.call('whatsapp_send', { to: 'alice weber', text }));
    expect(sock.sent).toEqual([{ jid: ALICE, content: { text } }]);
    expect(r).toEqual({
      sent: true,
      to: { chat_id: ALICE, name: 'Alice Weber', number: '+491701111111', is_group: false },
      message_id: expect.any(String),
      characters: 43,
    });
    const shown = preview(fx.prompter);
    expect(shown).toContain('to: Alice Weber, +491701111111');
    expect(shown).toContain('one person (not a group)');
    // The text as written, last, as one quoted line: its line break cannot print a line of its own.
    expect(shown.endsWith('message, written by the model: "Running 10 min late — order for me?⏎Thanks!"')).toBe(true);
    expect(shown).toContain('(43 characters)');
    // What was sent is in the history, as Baileys echoes it.
    await sock.settle();
    expect(value(await fx.call('whatsapp_messages', { chat: ALICE })).messages[0]).toEqual(expect.objectContaining({ from: 'me', text }));
  });

  test('says a group is a group before sending to it', async () => {
    const { fx, sock } = await seeded();
    value(await fx.call('whatsapp_send', { to: 'Family', text: 'on my way' }));
    expect(sock.sent).toEqual([{ jid: FAMILY, content: { text: 'on my way' } }]);
    expect(preview(fx.prompter)).toMatch(/to: Family \(a group: everyone in it receives this\)\nchat: group/);
  });

  test.each([
    ['an exact name', 'Alice Weber', ALICE, /Alice Weber, \+491701111111/],
    ['a name with other accents', 'ali yilmaz', null, null],
    ['a unique first name', 'alice', ALICE, /matched only part of this name/],
    ['a number with spaces and +', '+49 170 111 1111', ALICE, /Alice Weber/],
    ['a number with 00', '0049 1701111111', ALICE, /Alice Weber/],
    ['a chat id', FAMILY, FAMILY, /group/],
    ['a person known only by a LID, by push name', 'Zeynep', HIDDEN, /Zeynep, number hidden by WhatsApp/],
    ['a number nobody in the history has', '+44 20 7946 0000', '442079460000@s.whatsapp.net', /not in the WhatsApp history/],
  ])('recipient given as %s', async (_what, to, jid, shown) => {
    const { fx, sock } = await seeded();
    const r = await fx.call('whatsapp_send', { to, text: 'hi' });
    if (jid === null) {
      // "Ali Yılmaz" and "Ali Yilmaz" fold to the same name: ambiguous.
      const e = error(r);
      expect(e.code).toBe('CONFLICT');
      expect(sock.sent).toEqual([]);
      return;
    }
    value(r);
    expect(sock.sent).toEqual([{ jid, content: { text: 'hi' } }]);
    expect(preview(fx.prompter)).toMatch(shown);
  });

  test('an ambiguous name is refused with the candidates, before anyone is asked', async () => {
    const { fx, sock } = await seeded();
    const e = error(await fx.call('whatsapp_send', { to: 'Ali', text: 'hi' }));
    expect(e.code).toBe('CONFLICT');
    expect(e.message).toMatch(/fits 2 WhatsApp chats.*Nothing was sent/);
    expect(e.details.candidates).toEqual([
      { chat_id: ALI_2, name: 'Ali Yilmaz', number: '+905322222222', is_group: false },
      { chat_id: ALI_1, name: 'Ali Yılmaz', number: '+905321111111', is_group: false },
    ]);
    expect(fx.prompter.asked).toHaveLength(0);
    expect(sock.sent).toEqual([]);
  });

  test('an unknown name is refused; a partial number is never widened to a contact', async () => {
    const { fx, sock } = await seeded();
    const e = error(await fx.call('whatsapp_send', { to: 'Natalie', text: 'hi' }));
    expect(e.code).toBe('NOT_FOUND');
    expect(fx.prompter.asked).toHaveLength(0);
    // The last digits of Alice's number are a different number, used as written.
    value(await fx.call('whatsapp_send', { to: '1701111111', text: 'hi' }));
    expect(sock.sent).toEqual([{ jid: '1701111111@s.whatsapp.net', content: { text: 'hi' } }]);
  });

  test('a number nobody in the history has is checked with WhatsApp and used only as written', async () => {
    const { fx, sock } = await seeded();
    sock.notOnWhatsApp.add('442079460001');
    const e = error(await fx.call('whatsapp_send', { to: '+44 20 7946 0001', text: 'hi' }));
    expect(e.code).toBe('NOT_FOUND');
    expect(e.message).toMatch(/\+442079460001 does not have WhatsApp.*Nothing was sent/);
    // WhatsApp knows some numbers without a mobile prefix: never sent to the other number unasked.
    sock.knownAs.set('5215512345678', '5215512345678@s.whatsapp.net'.replace('521', '52'));
    const c = error(await fx.call('whatsapp_send', { to: '+52 1 55 1234 5678', text: 'hola' }));
    expect(c.code).toBe('CONFLICT');
    expect(c.message).toMatch(/WhatsApp knows \+5215512345678 as \+525512345678, not as written/);
    expect(sock.sent).toEqual([]);
  });

  test('is asked every time by default: a session approval does not cover the next message', async () => {
    const prompter = new ScriptedPrompter('allow-session');
    const { fx, sock } = await seeded({ prompter });
    value(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'one' }));
    value(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'two' }));
    expect(prompter.asked).toHaveLength(2);
    expect(prompter.asked[0]!.concern?.rule).toBe('whatsapp-send-confirm');
    expect(sock.sent).toHaveLength(2);
  });

  test('an administrator can turn asking every time off: then a session approval covers later messages', async () => {
    const prompter = new ScriptedPrompter('allow-session');
    const { fx, sock } = await seeded({ prompter, config: { confirmEverySend: false } });
    value(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'one' }));
    value(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'two' }));
    expect(prompter.asked).toHaveLength(1);
    expect(sock.sent).toHaveLength(2);
  });

  test('a person who edits the message in the approval sees the edit previewed again, and the edited text is sent', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    prompter.answer({ edit: { to: 'Alice Weber', text: 'See you at 6, not 5' } }, 'allow-once');
    const { fx, sock } = await seeded({ prompter });
    value(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'See you at 5' }));
    expect(prompter.asked).toHaveLength(2);
    expect(preview(prompter, 1)).toMatch(/\(19 characters\)[^]*"See you at 6, not 5"$/);
    expect(sock.sent).toEqual([{ jid: ALICE, content: { text: 'See you at 6, not 5' } }]);
  });

  test('an edit that turns the recipient into an ambiguous name is refused, and nothing is sent', async () => {
    const prompter = new ScriptedPrompter('deny-once');
    prompter.answer({ edit: { to: 'Ali', text: 'hi' } });
    const { fx, sock } = await seeded({ prompter });
    expect(error(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'hi' })).code).toBe('PERMISSION_DENIED');
    // Asked again with the call as it was, and why the edit was not taken.
    expect(prompter.asked[1]!.editProblem).toMatch(/"Ali" fits 2 WhatsApp chats/);
    expect(prompter.asked[1]!.preview?.facts?.[0]).toEqual({ label: 'to', value: 'Alice Weber, +491701111111' });
    expect(sock.sent).toEqual([]);
  });

  test('a denial sends nothing', async () => {
    const prompter = new ScriptedPrompter('deny-once');
    const { fx, sock } = await seeded({ prompter });
    expect(error(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'hi' })).code).toBe('PERMISSION_DENIED');
    expect(sock.sent).toEqual([]);
  });

  test('sends at most 10 messages a minute', async () => {
    const { fx, sock } = await seeded();
    for (let i = 1; i <= 10; i++) value(await fx.call('whatsapp_send', { to: 'Alice Weber', text: `message ${i}` }));
    const asked = fx.prompter.asked.length;
    const e = error(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'message 11' }));
    expect(e.code).toBe('RATE_LIMITED');
    expect(e.message).toMatch(/At most 10 WhatsApp messages a minute.*try again in \d+ s/);
    expect(fx.prompter.asked).toHaveLength(asked);
    expect(sock.sent).toHaveLength(10);
    // The window runs on the kernel's clock: still full 59 s later, open again once the minute has passed.
    fx.clock.advance(59_000);
    expect(error(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'message 11' }))).toMatchObject({
      code: 'RATE_LIMITED',
      message: expect.stringMatching(/try again in 1 s/),
    });
    fx.clock.advance(1_001);
    value(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'message 11' }));
    expect(sock.sent).toHaveLength(11);
  });

  test('refuses a text over 4,096 characters (counted as characters, not bytes)', async () => {
    const { fx, sock } = await seeded();
    expect(error(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'x'.repeat(4097) })).code).toBe('INVALID_ARGS');
    value(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'ü'.repeat(4096) }));
    expect(sock.sent).toHaveLength(1);
  });

  test('with the socket down, says so and sends nothing', async () => {
    const { fx, sock } = await seeded();
    sock.close(428);
    await sock.settle();
    const e = error(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'hi' }));
    expect(e.code).toBe('TOOL_FAILED');
    expect(e.message).toMatch(/not connected right now.*Nothing was sent/);
    expect(sock.sent).toEqual([]);
  });

  test('outside memo serve, points to it; with nothing linked, points to memo whatsapp link', async () => {
    const { fx } = await seeded();
    const again = await fx.restartWhatsApp();
    expect(error(await again.call('whatsapp_send', { to: 'Alice Weber', text: 'hi' })).message).toMatch(/memo serve/);
    const fresh = await whatsappKernel();
    expect(error(await fresh.call('whatsapp_send', { to: '+4917011111111', text: 'hi' })).message).toMatch(/memo whatsapp link.*Nothing was sent/);
  });

  test('the audit line keeps the recipient and the text, and no credentials', async () => {
    const { fx } = await seeded();
    value(await fx.call('whatsapp_send', { to: 'Alice Weber', text: 'audit me' }));
    const line = fx.kernel.audit.tail({ tool: 'whatsapp_send' }).at(-1)!;
    expect(line.tool).toBe('whatsapp_send');
    expect(JSON.stringify(line)).toContain('audit me');
    expect(JSON.stringify(line)).not.toMatch(/noiseKey|signedIdentityKey|advSecretKey/);
  });
});
