/**
 * A pack panel's lists (kernel/packs/console-panels.ts PanelList): the arguments a list's read tool
 * gets from what the person typed and the dates the page worked out, the rows the page is sent
 * (only the keys its columns and row actions name), and a row action's arguments from its row.
 */
import type { JsonValue, PanelList, PanelRowAction, ToolSpec } from 'memo-kernel/pack';

/** The most rows one list answer carries (the rest are counted). */
export const MAX_LIST_ROWS = 500;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A value at a dotted key (`next.at`), or undefined. */
export function valueAt(obj: unknown, key: string): unknown {
  let v: unknown = obj;
  for (const part of key.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/**
 * The call's arguments: the person's `fields` (declared ones only, typed as the tool's schema says),
 * the page's `dates` (declared ones only, YYYY-MM-DD), then the list's fixed `args`, which win.
 */
export function listArgs(
  list: PanelList,
  spec: Pick<ToolSpec, 'parameters'> | undefined,
  given: unknown,
): { args: Record<string, JsonValue> } | { problem: string } {
  const body = (given ?? {}) as { fields?: unknown; dates?: unknown };
  const fields = body.fields ?? {};
  const dates = body.dates ?? {};
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields) || typeof dates !== 'object' || dates === null || Array.isArray(dates))
    return { problem: 'Send {"fields": {...}, "dates": {...}}.' };
  const props = ((spec?.parameters as { properties?: Record<string, { type?: string }> } | undefined)?.properties ?? {}) as Record<string, { type?: string }>;
  const args: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(fields as Record<string, unknown>)) {
    if (!(list.fields ?? []).includes(k)) return { problem: `This list takes no "${k}".` };
    if (v === '' || v === null || v === undefined) continue;
    const type = props[k]?.type;
    if (type === 'integer' || type === 'number') {
      const n = typeof v === 'number' ? v : Number(v);
      if (!Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n)))
        return { problem: `"${k}" must be a ${type === 'integer' ? 'whole ' : ''}number.` };
      args[k] = n;
    } else if (typeof v === 'string') args[k] = v.slice(0, 1000);
    else return { problem: `"${k}" must be text.` };
  }
  for (const [k, v] of Object.entries(dates as Record<string, unknown>)) {
    if (!(k in (list.dates ?? {}))) return { problem: `This list takes no date "${k}".` };
    if (typeof v !== 'string' || !DAY.test(v) || Number.isNaN(Date.parse(v))) return { problem: `"${k}" must be a date (YYYY-MM-DD).` };
    args[k] = v;
  }
  return { args: { ...args, ...(list.args ?? {}) } };
}

/** The keys a row is sent with: its columns' and the ones its actions take arguments from. */
function sentKeys(list: PanelList): string[] {
  return [
    ...new Set([...list.columns.flatMap((c) => (c.itemId ? [c.key, c.itemId] : [c.key])), ...(list.rowActions ?? []).flatMap((a) => Object.values(a.from))]),
  ];
}

/** The rows of a list's result, each only with the keys the page uses; null when the result holds no list there. */
export function listRows(list: PanelList, value: unknown): { rows: Array<Record<string, unknown>>; total: number } | null {
  const found = list.rows ? valueAt(value, list.rows) : value;
  if (!Array.isArray(found)) return null;
  const keys = sentKeys(list);
  const rows = found.slice(0, MAX_LIST_ROWS).map((row) => Object.fromEntries(keys.map((k) => [k, shown(valueAt(row, k))])));
  return { rows, total: found.length };
}

/** A cell's value as the page shows it: text, a number or true/false; anything else as short JSON. */
function shown(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v.length > 2000 ? `${v.slice(0, 2000)}…` : v;
  if (typeof v === 'number' || typeof v === 'boolean') return v;
  const text = JSON.stringify(v);
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

/** A row action's arguments: from the row's keys, under the action's fixed ones; a missing key is a problem. */
export function rowActionArgs(action: PanelRowAction, row: unknown): { args: Record<string, JsonValue> } | { problem: string } {
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return { problem: 'Send {"row": {...}}: the row the action is for.' };
  const args: Record<string, JsonValue> = {};
  for (const [arg, key] of Object.entries(action.from)) {
    const v = (row as Record<string, unknown>)[key];
    if (v === undefined || v === null || v === '') return { problem: `The row has no "${key}" for ${action.label}.` };
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
      return { problem: `The row's "${key}" must be text, a number or true/false.` };
    args[arg] = v;
  }
  return { args: { ...args, ...(action.args ?? {}) } };
}
