/**
 * What the planning tools (statuses, projects, tasks) share: the pack's DataSource, one write at a
 * time with the vault's other writes, references by id or name, gapless orders, and previews as field
 * changes. Planning rows live in their own database (vault-planning: a SQLite file, or the pack's
 * PostgreSQL schema shared by every instance), apart from the index (vault.sqlite, a per-instance
 * cache of the files): reindex never touches them.
 */
import { randomBytes } from 'node:crypto';
import type { DataSource, EntityManager, ObjectLiteral } from 'typeorm';
import { MemoError, type Preview, type ToolContext } from 'memo-kernel/pack';
import { runtimeOf } from './runtime.js';
import { shown } from './vault.js';

export type Impl<A> = {
  run: (args: A, ctx: ToolContext) => Promise<unknown>;
  preview?: (args: A, ctx: ToolContext) => Promise<Preview>;
  assess?: (args: A, ctx: ToolContext) => Promise<null>;
};

/** The entities, loaded with typeorm on first use (as the runtime loads them), never when the pack loads. */
export const schema = () => import('./schema.js');

export const newId = (): string => randomBytes(8).toString('hex');
export const now = (): string => new Date().toISOString();

/** The planning DataSource, once the vault is open (planning belongs to the vault that is configured). */
export async function planningDb(ctx: ToolContext): Promise<DataSource> {
  const rt = runtimeOf(ctx);
  await rt.vault(ctx);
  return rt.planningDatabase();
}

/** The index's DataSource (vault.sqlite), for what only it holds beside the files (tag settings). */
export async function indexDb(ctx: ToolContext): Promise<DataSource> {
  const rt = runtimeOf(ctx);
  await rt.vault(ctx);
  return rt.database();
}

/**
 * Runs a write in one transaction, queued behind the vault's other writes and index batches, so a
 * planning write and the note writes it goes with (a project's hub page) happen one at a time in
 * this instance. On PostgreSQL the instances sharing the database take turns as well (a transaction
 * advisory lock on the schema, released at commit or rollback): a write reads a whole list and
 * renumbers it, which two instances doing at once would leave with gaps, twins or a deadlock.
 */
export function inPlanning<A, T>(fn: (em: EntityManager, args: A, ctx: ToolContext) => Promise<T>) {
  return async (args: A, ctx: ToolContext): Promise<T> => {
    const rt = runtimeOf(ctx);
    const vault = await rt.vault(ctx);
    const ds = await rt.planningDatabase();
    const shared = ds.options.type === 'postgres';
    return vault.exclusive(() =>
      ds.transaction(async (em) => {
        if (shared) await em.query(`SELECT pg_advisory_xact_lock(hashtext('memo-vault-planning:' || current_schema()))`);
        return fn(em, args, ctx);
      }),
    );
  };
}

/**
 * A write that may set a reminder time: once it is committed (never inside its transaction, which
 * another connection would not see yet), the reminder service looks again at once.
 */
export function thenRemind<A, T>(run: (args: A, ctx: ToolContext) => Promise<T>) {
  return async (args: A, ctx: ToolContext): Promise<T> => {
    const out = await run(args, ctx);
    runtimeOf(ctx).reminders?.poke();
    return out;
  };
}

/**
 * Runs a write to the index's own tables (tag settings) in one transaction, queued behind the vault's
 * other writes: the index batches share its one SQLite connection, so one must never run inside (and
 * be rolled back with) this transaction.
 */
export function inIndex<A, T>(fn: (em: EntityManager, args: A, ctx: ToolContext) => Promise<T>) {
  return async (args: A, ctx: ToolContext): Promise<T> => {
    const rt = runtimeOf(ctx);
    const vault = await rt.vault(ctx);
    const ds = await rt.database();
    return vault.exclusive(() => ds.transaction((em) => fn(em, args, ctx)));
  };
}

/**
 * Runs `check` (the call's references and values) before anyone is asked: a call naming no such item,
 * or with a value that cannot be stored, is refused outright rather than put to a person.
 */
export function assessWith<A>(check: (em: EntityManager, args: A) => Promise<unknown>) {
  return async (args: A, ctx: ToolContext): Promise<null> => {
    await check((await planningDb(ctx)).manager, args);
    return null;
  };
}

/** A preview's field rows: only the fields that change; null reads "(not set)", an empty text "" (empty). */
export function fieldRows(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const show = (v: unknown) => (v === undefined || v === null ? '(not set)' : v === '' ? '"" (empty)' : typeof v === 'string' ? v : JSON.stringify(v));
  return Object.keys(after)
    .filter((k) => after[k] !== undefined && JSON.stringify(before[k] ?? null) !== JSON.stringify(after[k] ?? null))
    .map((k) => `${k}: ${show(before[k])} -> ${show(after[k])}`);
}

export function fieldsPreview(head: string, before: Record<string, unknown>, after: Record<string, unknown>): Preview {
  const rows = fieldRows(before, after);
  return { kind: 'fields', text: [head, ...(rows.length ? rows : ['(no field changes)'])].join('\n') };
}

/** The changes a run applies: the given keys, with null meaning "clear". Unchanged keys are dropped. */
export function changesOf<T extends Record<string, unknown>>(row: T, proposed: Partial<T>): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(proposed) as Array<[keyof T, T[keyof T]]>) {
    if (v !== undefined && JSON.stringify(row[k] ?? null) !== JSON.stringify(v ?? null)) out[k] = v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The fields a preview showed, checked again by the run (nothing lands on a value nobody saw)

const previewed = new WeakMap<object, Record<string, unknown>>();

export function rememberFields(ctx: ToolContext, fields: Record<string, unknown>): void {
  previewed.set(ctx, JSON.parse(JSON.stringify(fields)) as Record<string, unknown>);
}

export function checkFields(ctx: ToolContext, what: string, fields: Record<string, unknown>): void {
  const seen = previewed.get(ctx);
  if (!seen) return;
  for (const [k, v] of Object.entries(seen)) {
    if (JSON.stringify(fields[k] ?? null) !== JSON.stringify(v ?? null))
      throw new MemoError('CONFLICT', `${what} changed after the preview was shown (${k}), so nothing was written. Look at it again and retry.`, {
        details: { field: k },
      });
  }
}

// ---------------------------------------------------------------------------------------------
// References

/** One row by id, or by name (any case) when `nameKey` is given; several with that name are refused with their ids. */
export function pick<T extends { id: string }>(rows: T[], refText: string, what: string, nameKey: keyof T): T {
  const byId = rows.find((r) => r.id === refText);
  if (byId) return byId;
  const key = refText.trim().toLowerCase();
  const named = rows.filter((r) => String(r[nameKey]).trim().toLowerCase() === key);
  if (named.length === 1) return named[0]!;
  if (named.length > 1)
    throw new MemoError('VALIDATION', `${named.length} ${what}s are called ${shown(refText)}; name one by id: ${named.map((r) => r.id).join(', ')}.`, {
      details: { candidates: named.map((r) => r.id) },
    });
  throw new MemoError('NOT_FOUND', `No ${what} ${shown(refText)} (give its id or its ${String(nameKey)}).`);
}

// ---------------------------------------------------------------------------------------------
// Orders: gapless 0..n-1 within each list, rewritten whole inside the write's transaction

/** `rows` in the order `ids` asks for: the listed first, in that order, the others after them as they were. */
export function reordered<T extends { id: string }>(rows: T[], ids: string[], resolve: (ref: string) => T): T[] {
  const first = ids.map(resolve);
  const seen = new Set<string>();
  for (const r of first) {
    if (seen.has(r.id)) throw new MemoError('VALIDATION', `${shown(r.id)} is listed twice.`);
    seen.add(r.id);
  }
  return [...first, ...rows.filter((r) => !seen.has(r.id))];
}

/** Writes sort_order 0..n-1 for `ordered`, touching only the rows whose place changed. */
export async function renumber<T extends ObjectLiteral & { id: string; sort_order: number }>(
  em: EntityManager,
  entity: new () => T,
  ordered: T[],
): Promise<void> {
  for (const [i, row] of ordered.entries()) {
    if (row.sort_order !== i) {
      await em.update(entity, { id: row.id }, { sort_order: i } as never);
      row.sort_order = i;
    }
  }
}

/** Where a new row goes: `position` (clamped) or the end. */
export function placeAt<T>(rows: T[], row: T, position: number | undefined): T[] {
  const at = position === undefined ? rows.length : Math.min(position, rows.length);
  return [...rows.slice(0, at), row, ...rows.slice(at)];
}

export function cleanName(name: string, what: string): string {
  const n = name.trim();
  if (!n) throw new MemoError('VALIDATION', `The ${what} is empty.`);
  return n;
}

/** A list of titles for a preview: the first few, then how many more. */
export function listed(titles: string[], max = 20): string[] {
  const out = titles.slice(0, max).map((t) => `  - ${t}`);
  if (titles.length > max) out.push(`  ... and ${titles.length - max} more`);
  return out;
}
