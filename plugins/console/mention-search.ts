/**
 * The chat's @mention picker (seed 003): notes, tasks, journal entries, inbox items and calendar
 * events matching what the person typed after `@`, each with its item icon. Every search reads
 * through the pipeline with the packs' own read tools, as the host caller `console` (reads are never
 * asked; each is audited), and each result is the item as the tools' `items` name it, so a mention
 * and a reply's link are the same reference. A kind whose pack is not loaded is left out, and says so.
 */
import type { ItemRef, JsonValue, PackAdministration } from 'memo-kernel/pack';
import { isItemType } from './item-view.js';

/** The most results of one kind, and in all. */
const PER_KIND = 6;
const MAX_RESULTS = 20;
const MAX_QUERY = 200;
/** Journal entries and events are matched among the newest of these (the tools list by date). */
const SCAN = 200;
const DAY = 86_400_000;

export interface MentionResults {
  query: string;
  results: ItemRef[];
  /** Kinds that could not be searched (their pack is not loaded or refused), with why. */
  missing: Array<{ type: ItemRef['type']; reason: string }>;
}

/** Lower case without accents, for matching a title the way a person types it. */
const fold = (s: string) =>
  s
    .normalize('NFD')
    .replace(/\p{Diacritic}/gu, '')
    .toLowerCase();

export async function searchMentions(admin: PackAdministration, rawQuery: string, now: number, signal: AbortSignal): Promise<MentionResults> {
  const query = rawQuery.trim().slice(0, MAX_QUERY);
  const missing: MentionResults['missing'] = [];
  const wanted = fold(query);
  const matches = (title: string) => !wanted || fold(title).includes(wanted);
  /** One kind's items, as the tool names them; matched by title unless the tool searched already (`ranked`). */
  const read = async (type: ItemRef['type'], tool: string, args: Record<string, unknown>, ranked = false): Promise<ItemRef[]> => {
    const r = await admin.invoke(tool, args, signal);
    if (!r.ok) {
      missing.push({ type, reason: r.error.message });
      return [];
    }
    return (r.items ?? []).filter((i) => i.type === type && (ranked || matches(i.title))).slice(0, PER_KIND);
  };
  const groups = await Promise.all([
    // Notes by the vault's own search (titles, aliases, text: a note found by its body counts).
    // With nothing typed yet, the search lists the most recently changed notes.
    read('note', 'vault_search_notes', { query, limit: PER_KIND }, true),
    read('task', 'vault_list_tasks', { limit: SCAN }),
    read('journal', 'vault_list_journal_entries', { limit: SCAN }),
    read('inbox', 'vault_list_inbox_items', { limit: SCAN }),
    read('event', 'get_calendar_events', { start: new Date(now - 90 * DAY).toISOString(), end: new Date(now + 365 * DAY).toISOString(), limit: SCAN }),
  ]);
  return { query, results: groups.flat().slice(0, MAX_RESULTS), missing };
}

/** The mentions a turn request carries, checked: at most 20 references of known kinds. */
export function checkMentions(given: unknown): ItemRef[] | string {
  if (given === undefined) return [];
  if (!Array.isArray(given) || given.length > 20) return '"mentions" must be a list of at most 20 items.';
  const out: ItemRef[] = [];
  for (const m of given as JsonValue[]) {
    const o = typeof m === 'object' && m !== null && !Array.isArray(m) ? m : null;
    const type = o?.type;
    if (
      !o ||
      typeof type !== 'string' ||
      !isItemType(type) ||
      typeof o.id !== 'string' ||
      !o.id ||
      o.id.length > 500 ||
      typeof o.title !== 'string' ||
      o.title.length > 300
    )
      return 'Each mention is {"type", "id", "title"}: a kind of item, its id and its title.';
    out.push({ type, id: o.id, title: o.title });
  }
  return out;
}
