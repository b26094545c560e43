/**
 * An item a chat reply links (a note, task, inbox item, journal entry, event, project, folder or
 * canvas), as the console's item view shows it. Each is read through the pipeline with the pack's
 * own read tool, as the host caller `console` (reads are never asked; each is audited), so the view
 * shows what the tools would show an agent, and nothing a tool could not read.
 */
import type { ItemType, JsonValue, PackAdministration } from 'memo-kernel/pack';
import { ITEM_TYPES } from 'memo-kernel/pack';

export interface ItemViewRefusal {
  status: number;
  code: string;
  message: string;
}

export interface ItemView {
  type: ItemType;
  id: string;
  /** What the read tool answered (the note's text as markdown, the task's fields, the canvas's SVG). */
  value: JsonValue;
  tool: string;
}

/** How far around today an event is looked for by its id (get_calendar_events reads a range). */
const EVENT_WINDOW_DAYS = 400;

/** A JSON object's fields, or none when `v` is not an object. */
export const obj = (v: JsonValue): Record<string, JsonValue> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {});

export function isItemType(type: string): type is ItemType {
  return (ITEM_TYPES as readonly string[]).includes(type);
}

/** The read tool and its arguments for an item. */
function readOf(type: ItemType, id: string, now: number): { tool: string; args: Record<string, unknown> } {
  switch (type) {
    case 'note':
      return { tool: 'vault_read_note', args: { note: id } };
    case 'journal':
      return { tool: 'vault_get_journal_entry', args: { date: id } };
    case 'task':
      return { tool: 'vault_get_task', args: { task: id } };
    case 'inbox':
      return { tool: 'vault_get_inbox_item', args: { item: id } };
    case 'project':
      return { tool: 'vault_get_project', args: { project: id } };
    case 'folder':
      return { tool: 'vault_list_folder', args: { path: id } };
    case 'canvas':
      return { tool: 'vault_render_canvas', args: { canvas: id, format: 'svg' } };
    case 'event': {
      const day = 86_400_000;
      return {
        tool: 'get_calendar_events',
        args: { start: new Date(now - EVENT_WINDOW_DAYS * day).toISOString(), end: new Date(now + EVENT_WINDOW_DAYS * day).toISOString(), limit: 1000 },
      };
    }
  }
}

type Failed = Extract<Awaited<ReturnType<PackAdministration['invoke']>>, { ok: false }>;

function refusal(r: Failed): ItemViewRefusal {
  const status = r.error.code === 'NOT_FOUND' ? 404 : r.error.code === 'UNKNOWN_TOOL' || r.error.code === 'TOOL_DISABLED' ? 409 : 400;
  return { status, code: r.error.code, message: r.error.message };
}

export async function itemView(admin: PackAdministration, type: string, id: string, now: number, signal: AbortSignal): Promise<ItemView | ItemViewRefusal> {
  if (!isItemType(type)) return { status: 404, code: 'NOT_FOUND', message: `There is no kind of item called "${type.slice(0, 40)}".` };
  if (!id || id.length > 500) return { status: 400, code: 'VALIDATION', message: 'An item id is 1 to 500 characters.' };
  const { tool, args } = readOf(type, id, now);
  const r = await admin.invoke(tool, args, signal);
  if (!r.ok) return refusal(r);
  if (type !== 'event') return { type, id, tool, value: r.value };
  // An event is found by its id among the events around today (each occurrence of a repeating one shares it: the next is shown).
  const events = obj(r.value).events;
  const list = Array.isArray(events) ? events : [];
  const today = new Date(now).toISOString();
  const mine = list.filter((e) => obj(e).id === id);
  const endOf = (e: JsonValue) => {
    const at = obj(e).end ?? obj(e).start;
    return typeof at === 'string' ? at : '';
  };
  const shown = mine.find((e) => endOf(e) >= today) ?? mine.at(-1);
  if (!shown)
    return {
      status: 404,
      code: 'NOT_FOUND',
      message: `No event ${id} within ${EVENT_WINDOW_DAYS} days of today (it was deleted, or its calendar is not shared with the agent).`,
    };
  return { type, id, tool, value: shown };
}
