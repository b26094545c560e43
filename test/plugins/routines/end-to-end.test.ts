/**
 * The "done when": "Every weekday at 8:30 summarise my calendar and inbox" becomes a routine
 * the user approves once, which then runs on time through the pipeline, survives a restart, and
 * shows its history. The model is scripted; everything else is real.
 */
import { runTurn } from '../../../kernel/agent/agent-loop.js';
import { ManualClock } from '../../../kernel/clock.js';
import type { PackDefinition } from '../../../kernel/tools/tool-registry.js';
import { ScriptedPrompter, tool } from '../../helpers/kernel-fixture.js';
import { shownPreview } from '../../helpers/shown-preview.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';
import { FRIDAY_NOON, routinesKernel, type RoutinesFixture } from './helpers.js';

/** Stand-ins for a calendar and a mail pack: what a person would have loaded. */
const mailAndCalendar: PackDefinition = {
  id: 'mail-and-calendar',
  version: '1.0.0',
  tools: [
    { spec: tool('read_calendar', 'safe'), impl: () => ({ events: ['09:00 stand-up', '14:00 dentist'] }) },
    { spec: tool('read_inbox', 'safe'), impl: () => ({ unread: ['Invoice from ACME'] }) },
    { spec: tool('save_summary', 'medium', 'write'), impl: (args: Record<string, unknown>) => ({ saved: args.text }) },
  ],
};

const routineModel = (_r: unknown, n: number) => {
  switch (n) {
    case 1:
      return reply('', toolCall('read_calendar', {}), toolCall('read_inbox', {}));
    case 2:
      return reply('', toolCall('save_summary', { text: 'stand-up, dentist; 1 invoice' }));
    default:
      return reply('Today: stand-up at 09:00, dentist at 14:00. Inbox: an invoice from ACME.');
  }
};

describe('a routine from plain language, end to end', () => {
  let fx: RoutinesFixture;
  afterEach(async () => fx?.close());

  it('is approved once, runs on time every weekday through the pipeline, survives a restart and shows its history', async () => {
    const clock = new ManualClock(FRIDAY_NOON);
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ clock, prompter, script: routineModel });
    fx.kernel.registerPack(mailAndCalendar);

    // The chat turn: the model turns the user's words into a structured routine.
    const words = 'Every weekday at 8:30 summarise my calendar and inbox';
    const chatModel = new ScriptedProvider((_r, n) =>
      n === 1
        ? reply(
            '',
            toolCall('create_routine', {
              name: 'Morning summary',
              request: words,
              prompt: 'Summarise my calendar and inbox for today, and save the summary.',
              schedule: { kind: 'cron', cron: '30 8 * * 1-5', time_zone: 'Europe/Istanbul' },
              tools: ['read_calendar', 'read_inbox', 'save_summary'],
            }),
          )
        : reply('Done: it runs every weekday at 08:30 Istanbul time.'),
    );
    const chat = await runTurn(fx.kernel, { provider: chatModel, model: 'chat-model', conversationId: 'chat-1', history: [], userMessage: words });
    expect(chat.steps).toEqual([expect.objectContaining({ tool: 'create_routine', outcome: 'ok' })]);
    expect(prompter.asked.map((q) => q.tool)).toEqual(['create_routine']);
    expect(shownPreview(prompter.asked[0])).toContain('when: every weekday at 08:30 (Europe/Istanbul)');
    expect(shownPreview(prompter.asked[0])).toContain('may use: save_summary (medium, write): PRE-APPROVED for its runs');
    const id = (JSON.parse(chat.messages.find((m) => m.role === 'tool')!.content) as { id: string }).id;

    // Memo restarts over the weekend; the routine is still there.
    await fx.close();
    clock.advance(24 * 60 * 60_000);
    fx = await routinesKernel({ clock, prompter, dataDir: fx.dataDir, script: routineModel });
    fx.kernel.registerPack(mailAndCalendar);

    const monday = Date.UTC(2026, 2, 30, 5, 30);
    const tuesday = Date.UTC(2026, 2, 31, 5, 30);
    await fx.advanceTo(monday);
    await fx.advanceTo(tuesday);

    const runs = fx.runs(id);
    expect(runs.map((r) => [r.scheduled_for, r.trigger, r.status])).toEqual([
      [monday, 'schedule', 'ok'],
      [tuesday, 'schedule', 'ok'],
    ]);
    expect(runs[0]!.answer).toBe('Today: stand-up at 09:00, dentist at 14:00. Inbox: an invoice from ACME.');
    expect(JSON.parse(runs[0]!.steps).map((s: { tool: string; outcome: string }) => [s.tool, s.outcome])).toEqual([
      ['read_calendar', 'ok'],
      ['read_inbox', 'ok'],
      ['save_summary', 'ok'],
    ]);
    // Approved once: nobody was asked again, and every call is in the audit as the routine's.
    expect(prompter.asked.map((q) => q.tool)).toEqual(['create_routine']);
    const saves = fx.kernel.audit.tail({ tool: 'save_summary' });
    expect(saves.map((l) => [l.caller.kind, l.caller.id, l.decision])).toEqual([
      ['routine', id, 'allow:pre-approved'],
      ['routine', id, 'allow:pre-approved'],
    ]);
    // The model it runs with was pinned when it was created, not the one chatting.
    expect(fx.providers.every((p) => p.requests.every((r) => r.model === 'model-a'))).toBe(true);
  });
});
