/**
 * The items a vault tool's result names (seed 003: "Lists link each returned note, task, inbox item,
 * journal entry, calendar event, project, or folder that has a navigable reference. Create and
 * update confirmations also link the affected item when the tool returns its ID or journal date").
 * The kernel's pipeline asks this after a call succeeds; the faces link what it answers. Only
 * explicit references are linked: an object without an id (or a journal entry without its date)
 * names nothing.
 */
import type { ItemRef, JsonValue, ToolContext, ToolImplementation } from 'memo-kernel/pack';

type Obj = Record<string, JsonValue>;
type Kind = 'note' | 'task' | 'inbox' | 'journal' | 'project' | 'folder' | 'entries';

const isObj = (v: JsonValue | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: JsonValue | undefined): string | undefined => (typeof v === 'string' && v ? v : undefined);

/** What each tool's result holds, by the tool's name: the kind of its objects. */
function kindOf(tool: string): Kind | null {
  // A deleted item cannot be opened.
  if (/_delete_/.test(tool)) return null;
  if (tool === 'vault_list_folder') return 'entries';
  if (/_(folder)$/.test(tool)) return 'folder';
  if (/journal/.test(tool)) return 'journal';
  if (/inbox/.test(tool)) return 'inbox';
  if (/subtask|_task/.test(tool)) return 'task';
  if (/project/.test(tool)) return 'project';
  if (/note|search_notes|current_note|tag|artifact/.test(tool)) return 'note';
  return null;
}

function icon(o: Obj): string | undefined {
  const own = str(o.icon) ?? (isObj(o.front_matter) ? str(o.front_matter.icon) : undefined);
  return own;
}

/** An inbox item's capture type, as its icon: a link, or a written note. */
function inboxIcon(o: Obj): string {
  return str(o.url) || /^https?:\/\/\S+$/.test(str(o.content)?.trim() ?? '') ? '🔗' : '📝';
}

function refOf(kind: Exclude<Kind, 'entries'>, o: Obj, journal: RegExp): ItemRef | null {
  switch (kind) {
    case 'note': {
      const id = str(o.id);
      if (!id || str(o.type) === 'folder') return null;
      const title = str(o.title) ?? str(o.path) ?? id;
      // A day's file in the journal folder is that journal entry, found by its date.
      const day = journal.exec(str(o.path) ?? '')?.[1];
      if (day) return { type: 'journal', id: day, title };
      const i = icon(o);
      return { type: 'note', id, title, ...(i ? { icon: i } : {}) };
    }
    case 'journal': {
      const date = str(o.date);
      return date ? { type: 'journal', id: date, title: str(o.title) ?? date } : null;
    }
    case 'task': {
      const id = str(o.id);
      return id ? { type: 'task', id, title: str(o.title) ?? id } : null;
    }
    case 'inbox': {
      const id = str(o.id);
      return id ? { type: 'inbox', id, title: str(o.title) ?? id, icon: inboxIcon(o) } : null;
    }
    case 'project': {
      const id = str(o.id);
      const i = icon(o);
      return id ? { type: 'project', id, title: str(o.name) ?? id, ...(i ? { icon: i } : {}) } : null;
    }
    case 'folder': {
      const p = str(o.path);
      return p ? { type: 'folder', id: p, title: p.split('/').at(-1) ?? p } : null;
    }
  }
}

/** What the lists and single items under each usual key are (the tool's own kind for `entries` and `results`). */
const KEYS: Record<string, Exclude<Kind, 'entries'> | null> = {
  results: null,
  entries: null,
  notes: 'note',
  note: 'note',
  tasks: 'task',
  subtasks: 'task',
  task: 'task',
  projects: 'project',
  project: 'project',
  items: 'inbox',
  item: 'inbox',
};

/** The journal's day files, `<folder>/YYYY-MM-DD.md`, as a pattern giving the date. */
function journalFiles(folder: string): RegExp {
  const escaped = folder.replace(/^\/+|\/+$/g, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${escaped}/(\\d{4}-\\d{2}-\\d{2})\\.md$`);
}

export function vaultItems(tool: string, value: JsonValue, journalFolder = 'Journal'): ItemRef[] {
  const journal = journalFiles(journalFolder);
  const kind = kindOf(tool);
  if (!kind || !isObj(value)) return [];
  const out: ItemRef[] = [];
  const add = (k: Exclude<Kind, 'entries'>, o: JsonValue | undefined) => {
    if (!isObj(o)) return;
    const ref = refOf(k, o, journal);
    if (ref) out.push(ref);
  };
  if (kind === 'entries') {
    // A folder listing: its folders and notes, each by what it is.
    for (const e of Array.isArray(value.entries) ? value.entries : []) if (isObj(e)) add(str(e.type) === 'folder' ? 'folder' : 'note', e);
    return out;
  }
  // A confirmation or a single read names its item at the top; a list names each of its entries.
  add(kind, value);
  if (kind === 'folder' && Array.isArray(value.created))
    for (const p of value.created) if (typeof p === 'string' && p) out.push({ type: 'folder', id: p, title: p.split('/').at(-1) ?? p });
  for (const [key, k] of Object.entries(KEYS)) {
    const v = value[key];
    for (const o of Array.isArray(v) ? v : [v]) add(k ?? kind, o);
  }
  return out;
}

/** Each tool's code with its `items` (the kernel's pipeline asks it after a call succeeds). */
export function linked(all: Record<string, ToolImplementation>): Record<string, ToolImplementation> {
  const out: Record<string, ToolImplementation> = {};
  for (const [name, impl] of Object.entries(all)) {
    const items = (value: JsonValue, _args: Record<string, unknown>, ctx: ToolContext) => {
      const folder = ctx.config.journal_folder;
      return vaultItems(name, value, typeof folder === 'string' && folder.trim() ? folder : 'Journal');
    };
    out[name] = typeof impl === 'function' ? { run: impl, items } : { ...impl, items };
  }
  return out;
}
