import { makeKernel } from '../../helpers/kernel-fixture.js';
import { canvasKernel, error, PLUGINS, value, type CanvasFixture } from './helpers.js';

describe('cards: notes, tasks and events on a canvas through vault_add_canvas_item only', () => {
  let fx: CanvasFixture;
  let taskId: string;
  let eventId: string;
  beforeAll(async () => {
    fx = await canvasKernel({ calendar: true, files: { 'Ideas.md': '# Ideas\n\nsome text\n' } });
    taskId = value(await fx.call('vault_create_task', { title: 'Ship the canvas' })).id;
    eventId = value(await fx.call('create_calendar_event', { title: 'Design review', start: '2026-03-10T09:00' })).id;
    value(await fx.call('vault_create_canvas', { name: 'Board' }));
  });
  afterAll(async () => fx.close());

  it('puts a note, a task and an event on the canvas as cards carrying the entity and titled with it', async () => {
    fx.prompter.asked.length = 0;
    const r = value(
      await fx.call('vault_add_canvas_item', {
        canvas: 'Board',
        items: [
          { type: 'note', id: 'Ideas' },
          { type: 'task', id: taskId },
          { type: 'event', id: eventId },
        ],
      }),
    );
    expect(r.added.map((a: any) => [a.type, a.title])).toEqual([
      ['note', 'Ideas'],
      ['task', 'Ship the canvas'],
      ['event', 'Design review'],
    ]);
    expect(fx.prompter.asked[0]?.preview?.text).toContain('+ card for task');
    const els = fx.scene('Board.excalidraw').elements;
    const card = els.find((e: any) => e.id === r.added[1].elementId);
    expect(card).toMatchObject({ type: 'rectangle', customData: { memo: { type: 'task', id: taskId } } });
    expect(els.find((e: any) => e.containerId === card.id)).toMatchObject({ text: 'Ship the canvas' });
  });

  it('lists the canvas with its item count and reads the cards with their titles and the free text, without geometry', async () => {
    const els = value(await fx.call('vault_read_canvas_elements', { canvas: 'Board' })).elements;
    const cardId = els.find((e: any) => e.card?.type === 'note').id;
    value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Board',
        elements: [
          { type: 'text', x: 0, y: -100, text: 'Sprint board' },
          { type: 'arrow', start: { elementId: cardId }, end: { elementId: els.find((e: any) => e.card?.type === 'task').id } },
        ],
      }),
    );
    const list = value(await fx.call('vault_list_canvases', {}));
    expect(list.canvases).toEqual([expect.objectContaining({ name: 'Board.excalidraw', items: 3 })]);
    const read = value(await fx.call('vault_read_canvas', { canvas: 'Board' }));
    expect(read.items.map((i: any) => i.title)).toEqual(['Ideas', 'Ship the canvas', 'Design review']);
    expect(read.texts).toEqual([{ text: 'Sprint board' }]);
    expect(read.texts_truncated).toBe(false);
    expect(JSON.stringify(read)).not.toMatch(/"x"|"width"|"points"/);
  });

  it("reads a card's title as its task has it now, and marks a card whose task is gone", async () => {
    const t = value(await fx.call('vault_create_task', { title: 'Old name' })).id;
    value(await fx.call('vault_add_canvas_item', { canvas: 'Board', items: [{ type: 'task', id: t, x: 0, y: 900 }] }));
    value(await fx.call('vault_update_task', { task: t, title: 'New name' }));
    let card = value(await fx.call('vault_read_canvas', { canvas: 'Board' })).items.find((i: any) => i.id === t);
    expect(card).toMatchObject({ type: 'task', title: 'New name' });
    expect(card.missing).toBeUndefined();
    value(await fx.call('vault_delete_task', { task: t }));
    card = value(await fx.call('vault_read_canvas', { canvas: 'Board' })).items.find((i: any) => i.id === t);
    expect(card).toMatchObject({ title: 'Old name', missing: true });
    const id = card.elementId;
    value(await fx.call('vault_remove_canvas_item', { canvas: 'Board', elementId: id }));
  });

  it('caps the text it returns and says so with texts_truncated', async () => {
    value(await fx.call('vault_draw_on_canvas', { canvas: 'Board', elements: [{ type: 'text', x: 0, y: 600, text: 'word '.repeat(100) }] }));
    const read = value(await fx.call('vault_read_canvas', { canvas: 'Board', maxTextChars: 100 }));
    expect(read.texts_truncated).toBe(true);
    expect(read.texts.reduce((n: number, t: any) => n + t.text.length, 0)).toBeLessThanOrEqual(101);
  });

  it("refuses to rewrite a card's text but moves and restyles it", async () => {
    const card = value(await fx.call('vault_read_canvas_elements', { canvas: 'Board' })).elements.find((e: any) => e.card?.type === 'note');
    fx.prompter.asked.length = 0;
    const e = error(await fx.call('vault_edit_canvas_elements', { canvas: 'Board', changes: [{ elementId: card.id, text: 'Renamed' }] }));
    expect(e).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining("its text is that note's title") });
    const e2 = error(await fx.call('vault_edit_canvas_elements', { canvas: 'Board', changes: [{ elementId: card.labelId, text: 'Renamed' }] }));
    expect(e2.code).toBe('VALIDATION');
    expect(fx.prompter.asked).toHaveLength(0);
    value(await fx.call('vault_edit_canvas_elements', { canvas: 'Board', changes: [{ elementId: card.id, dx: 50, backgroundColor: '#d0bfff' }] }));
    const moved = value(await fx.call('vault_read_canvas_elements', { canvas: 'Board', ids: [card.id] })).elements[0];
    expect(moved).toMatchObject({ x: card.x + 50, backgroundColor: '#d0bfff', text: 'Ideas' });
  });

  it('refuses a card for something that does not exist, and cards minted through drawing', async () => {
    fx.prompter.asked.length = 0;
    const e = error(await fx.call('vault_add_canvas_item', { canvas: 'Board', items: [{ type: 'task', id: 'no-such-task' }] }));
    expect(e).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('there is no task "no-such-task"') });
    const e2 = error(await fx.call('vault_add_canvas_item', { canvas: 'Board', items: [{ type: 'event', id: 'local:nope@memo' }] }));
    expect(e2.code).toBe('NOT_FOUND');
    const e3 = error(
      await fx.call('vault_draw_on_canvas', { canvas: 'Board', elements: [{ type: 'rectangle', customData: { memo: { type: 'note', id: 'x' } } }] }),
    );
    expect(e3.code).toBe('INVALID_ARGS');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('takes a note card off by the note title', async () => {
    value(await fx.call('vault_remove_canvas_item', { canvas: 'Board', type: 'note', id: 'Ideas' }));
    expect(value(await fx.call('vault_read_canvas', { canvas: 'Board' })).items.map((i: any) => i.type)).toEqual(['task', 'event']);
  });

  it('takes a card off (the task itself stays), unbinding its arrows, after asking', async () => {
    fx.prompter.asked.length = 0;
    const r = value(await fx.call('vault_remove_canvas_item', { canvas: 'Board', type: 'task', id: taskId }));
    expect(r.removed).toEqual([expect.objectContaining({ type: 'task', id: taskId })]);
    expect(fx.prompter.asked[0]?.preview).toMatchObject({ kind: 'delete', text: expect.stringContaining('The task itself is not touched.') });
    const els = fx.scene('Board.excalidraw').elements;
    expect(els.some((e: any) => e.customData?.memo?.id === taskId)).toBe(false);
    const arrow = els.find((e: any) => e.type === 'arrow');
    expect(arrow.startBinding).toBeNull();
    expect(arrow.endBinding).toBeNull();
    expect(value(await fx.call('vault_list_canvases', {})).canvases[0].items).toBe(1);
    value(await fx.call('vault_get_task', { task: taskId }));
  });
});

describe('the Spatial Canvas feature switch and a missing vault pack', () => {
  it('answers every canvas tool with a message saying the feature is off', async () => {
    const fx = await canvasKernel();
    try {
      value(await fx.call('vault_create_canvas', { name: 'Board' }));
      value(await fx.call('vault_desktop_write', { operation: 'settings.setFeaturesSettings', args: [{ canvas: false }] }));
      const calls: Array<[string, Record<string, unknown>]> = [
        ['vault_list_canvases', {}],
        ['vault_read_canvas', { canvas: 'Board' }],
        ['vault_read_canvas_elements', { canvas: 'Board' }],
        ['vault_create_canvas', { name: 'Other' }],
        ['vault_add_canvas_item', { canvas: 'Board', items: [{ type: 'note', id: 'x' }] }],
        ['vault_remove_canvas_item', { canvas: 'Board', elementId: 'x' }],
        ['vault_draw_on_canvas', { canvas: 'Board', elements: [{ type: 'rectangle' }] }],
        ['vault_edit_canvas_elements', { canvas: 'Board', changes: [{ elementId: 'x', dx: 1 }] }],
        ['vault_render_canvas', { canvas: 'Board' }],
      ];
      for (const [tool, args] of calls) {
        const e = error(await fx.call(tool, args));
        expect([tool, e.code]).toEqual([tool, 'TOOL_DISABLED']);
        expect(e.message).toContain('Spatial Canvas feature is switched off');
      }
    } finally {
      await fx.close();
    }
  });
});

describe('without the packs a canvas needs', () => {
  it('says the vault pack is not loaded when it is not', async () => {
    const fx = makeKernel({ packs: [] });
    try {
      const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['canvas'] }]);
      expect(statuses.find((s) => s.id === 'canvas')?.status).toBe('loaded');
      const r = await fx.kernel.invoke({ tool: 'vault_list_canvases', args: {}, caller: { kind: 'agent' } });
      expect(error(r)).toMatchObject({ code: 'TOOL_FAILED', message: expect.stringContaining('The vault pack is not loaded') });
    } finally {
      await fx.close();
    }
  });

  it('says an event cannot be a card when the calendar pack is not loaded', async () => {
    const fx = await canvasKernel();
    try {
      value(await fx.call('vault_create_canvas', { name: 'Board' }));
      const e = error(await fx.call('vault_add_canvas_item', { canvas: 'Board', items: [{ type: 'event', id: 'local:x@memo' }] }));
      expect(e.message).toContain('The calendar pack is not loaded or does not offer events');
    } finally {
      await fx.close();
    }
  });
});
