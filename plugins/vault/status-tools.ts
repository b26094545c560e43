/**
 * The task statuses (a board's columns): list, create, update, delete, reorder. One ordered list for
 * the vault; a status marked is_done is where finished tasks go.
 */
import type { EntityManager } from 'typeorm';
import { MemoError, type ToolContext } from 'memo-kernel/pack';
import {
  assessWith,
  changesOf,
  checkFields,
  cleanName,
  fieldsPreview,
  inPlanning,
  listed,
  newId,
  now,
  pick,
  placeAt,
  planningDb,
  rememberFields,
  renumber,
  reordered,
  schema,
  type Impl,
} from './planning-store.js';
import type { StatusRow } from './schema.js';
import type { ToolArgs } from './tool-args.js';
import { shown } from './vault.js';

export async function allStatuses(em: EntityManager): Promise<StatusRow[]> {
  const { StatusRow } = await schema();
  return em.find(StatusRow, { order: { sort_order: 'ASC', created_at: 'ASC' } });
}

export async function findStatus(em: EntityManager, refText: string): Promise<StatusRow> {
  return pick(await allStatuses(em), refText, 'status', 'name');
}

function statusOut(s: StatusRow, taskCount?: number) {
  return {
    id: s.id,
    name: s.name,
    color: s.color,
    is_done: Boolean(s.is_done),
    sort_order: s.sort_order,
    ...(taskCount !== undefined ? { task_count: taskCount } : {}),
  };
}

/** Task counts by status id (archived tasks included: they still sit in the column). */
async function countsByStatus(em: EntityManager): Promise<Map<string, number>> {
  const { TaskRow } = await schema();
  const rows = await em
    .createQueryBuilder(TaskRow, 't')
    .select('t.status_id', 'id')
    .addSelect('COUNT(*)', 'n')
    .where('t.status_id IS NOT NULL')
    .groupBy('t.status_id')
    .getRawMany<{ id: string; n: number | string }>();
  return new Map(rows.map((r) => [r.id, Number(r.n)]));
}

function checkUniqueName(rows: StatusRow[], name: string, except?: string): void {
  const clash = rows.find((r) => r.id !== except && r.name.toLowerCase() === name.toLowerCase());
  if (clash) throw new MemoError('CONFLICT', `A status is already called ${shown(clash.name)} (id ${clash.id}).`);
}

export async function listStatuses(_args: ToolArgs['vault_list_statuses'], ctx: ToolContext) {
  const em = (await planningDb(ctx)).manager;
  const counts = await countsByStatus(em);
  return { statuses: (await allStatuses(em)).map((s) => statusOut(s, counts.get(s.id) ?? 0)) };
}

export const createStatus: Impl<ToolArgs['vault_create_status']> = {
  assess: assessWith(async (em, args) => checkUniqueName(await allStatuses(em), cleanName(args.name, 'status name'))),
  preview: async (args, ctx) => {
    const name = cleanName(args.name, 'status name');
    checkUniqueName(await allStatuses((await planningDb(ctx)).manager), name);
    return fieldsPreview('New status', {}, { name, color: args.color ?? null, is_done: args.is_done ?? false });
  },
  run: inPlanning(async (em, args) => {
    const { StatusRow } = await schema();
    const name = cleanName(args.name, 'status name');
    const rows = await allStatuses(em);
    checkUniqueName(rows, name);
    const row = em.create(StatusRow, {
      id: newId(),
      name,
      color: args.color ?? null,
      is_done: args.is_done ?? false,
      sort_order: rows.length,
      created_at: now(),
    });
    await em.insert(StatusRow, row);
    await renumber(em, StatusRow, placeAt(rows, row, args.position));
    return { ...statusOut(row), created: true, summary: `created status ${row.name}` };
  }),
};

function proposedStatus(args: ToolArgs['vault_update_status']): Partial<StatusRow> {
  return {
    ...(args.name !== undefined ? { name: cleanName(args.name, 'status name') } : {}),
    ...(args.color !== undefined ? { color: args.color } : {}),
    ...(args.is_done !== undefined ? { is_done: args.is_done } : {}),
  };
}

const shownStatus = (s: StatusRow) => ({ name: s.name, color: s.color, is_done: Boolean(s.is_done) });

export const updateStatus: Impl<ToolArgs['vault_update_status']> = {
  assess: assessWith(async (em, args) => {
    const s = await findStatus(em, args.status);
    const next = proposedStatus(args);
    if (next.name !== undefined) checkUniqueName(await allStatuses(em), next.name, s.id);
  }),
  preview: async (args, ctx) => {
    const em = (await planningDb(ctx)).manager;
    const s = await findStatus(em, args.status);
    const before = shownStatus(s);
    const changes = changesOf<Record<string, unknown>>(before, proposedStatus(args));
    rememberFields(ctx, Object.fromEntries(Object.keys(changes).map((k) => [k, before[k as keyof typeof before]])));
    return fieldsPreview(`Status ${s.name} (id ${s.id})`, before, changes);
  },
  run: inPlanning(async (em, args, ctx) => {
    const { StatusRow } = await schema();
    const s = await findStatus(em, args.status);
    const before = shownStatus(s);
    checkFields(ctx, `The status ${shown(s.name)}`, before);
    const changes = changesOf<Record<string, unknown>>(before, proposedStatus(args));
    if (typeof changes.name === 'string') checkUniqueName(await allStatuses(em), changes.name, s.id);
    if (Object.keys(changes).length) await em.update(StatusRow, { id: s.id }, changes);
    return {
      ...statusOut({ ...s, ...changes }),
      changed: Object.keys(changes),
      summary: `updated status ${typeof changes.name === 'string' ? changes.name : s.name}`,
    };
  }),
};

async function deletePlan(em: EntityManager, args: ToolArgs['vault_delete_status']) {
  const { TaskRow } = await schema();
  const s = await findStatus(em, args.status);
  const target = args.move_tasks_to !== undefined ? await findStatus(em, args.move_tasks_to) : null;
  if (target?.id === s.id) throw new MemoError('VALIDATION', `move_tasks_to names the status being deleted.`);
  const tasks = await em.find(TaskRow, { where: { status_id: s.id }, order: { sort_order: 'ASC' } });
  return { s, target, tasks };
}

export const deleteStatus: Impl<ToolArgs['vault_delete_status']> = {
  assess: assessWith(deletePlan),
  preview: async (args, ctx) => {
    const { s, target, tasks } = await deletePlan((await planningDb(ctx)).manager, args);
    const fate = target ? `move to the status ${target.name} (id ${target.id})` : 'are left with no status (not set)';
    const lines = [`Deletes the status ${s.name} (id ${s.id}).`];
    lines.push(tasks.length ? `Its ${tasks.length} task(s) ${fate}:` : 'No task is in it.', ...listed(tasks.map((t) => `${t.title} (id ${t.id})`)));
    rememberFields(ctx, { tasks: tasks.map((t) => t.id) });
    return { kind: 'delete', text: lines.join('\n') };
  },
  run: inPlanning(async (em, args, ctx) => {
    const { StatusRow, TaskRow } = await schema();
    const { s, target, tasks } = await deletePlan(em, args);
    checkFields(ctx, `The tasks in ${shown(s.name)}`, { tasks: tasks.map((t) => t.id) });
    if (tasks.length) await em.update(TaskRow, { status_id: s.id }, { status_id: target?.id ?? null, updated_at: now() });
    await em.delete(StatusRow, { id: s.id });
    await renumber(em, StatusRow, await allStatuses(em));
    return {
      id: s.id,
      name: s.name,
      deleted: true,
      tasks_moved: tasks.length,
      ...(target ? { moved_to: { id: target.id, name: target.name } } : {}),
      summary: `deleted status ${s.name}`,
    };
  }),
};

export const reorderStatuses: Impl<ToolArgs['vault_reorder_statuses']> = {
  assess: assessWith(async (em, args) => {
    const rows = await allStatuses(em);
    reordered(rows, args.ids, (r) => pick(rows, r, 'status', 'name'));
  }),
  preview: async (args, ctx) => {
    const rows = await allStatuses((await planningDb(ctx)).manager);
    const next = reordered(rows, args.ids, (r) => pick(rows, r, 'status', 'name'));
    return fieldsPreview('Status order', { order: rows.map((r) => r.name) }, { order: next.map((r) => r.name) });
  },
  run: inPlanning(async (em, args) => {
    const { StatusRow } = await schema();
    const rows = await allStatuses(em);
    const next = reordered(rows, args.ids, (r) => pick(rows, r, 'status', 'name'));
    await renumber(em, StatusRow, next);
    return { statuses: next.map((s) => statusOut(s)), summary: 'reordered statuses' };
  }),
};
