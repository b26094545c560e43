/**
 * Tasks: list (filters), get (with subtasks), create, update, delete, complete/uncomplete,
 * archive/unarchive, move (project, status, place), reorder. A task belongs to at most one project
 * and has at most one status; a subtask is one level deep and follows its parent's project. Each list
 * (the top-level tasks of a project, or the subtasks of a task) has its own gapless order.
 */
import type { EntityManager } from 'typeorm';
import { MemoError, type Preview, type ToolContext } from 'memo-kernel/pack';
import {
  assessWith,
  thenRemind,
  checkFields,
  cleanName,
  fieldRows,
  fieldsPreview,
  inPlanning,
  listed,
  newId,
  now,
  placeAt,
  planningDb,
  rememberFields,
  renumber,
  reordered,
  schema,
  type Impl,
} from './planning-store.js';
import { checkMoment, requireFuture } from './inbox-tools.js';
import { allProjects, findProject } from './project-tools.js';
import { runtimeOf } from './runtime.js';
import type { TaskRow } from './schema.js';
import { allStatuses, findStatus } from './status-tools.js';
import type { NextOccurrence } from './task-repeat.js';
import type { ToolArgs } from './tool-args.js';
import { shown } from './vault.js';
import { checkTag } from './write-tools.js';

// ---------------------------------------------------------------------------------------------
// Reading

export async function findTask(em: EntityManager, refText: string): Promise<TaskRow> {
  const { TaskRow } = await schema();
  const byId = await em.findOneBy(TaskRow, { id: refText });
  if (byId) return byId;
  const named = await em.createQueryBuilder(TaskRow, 't').where('LOWER(t.title) = :k', { k: refText.trim().toLowerCase() }).limit(11).getMany();
  if (named.length === 1) return named[0]!;
  if (named.length > 1)
    throw new MemoError('VALIDATION', `Several tasks are called ${shown(refText)}; name one by id: ${named.map((t) => t.id).join(', ')}.`, {
      details: { candidates: named.map((t) => t.id) },
    });
  throw new MemoError('NOT_FOUND', `No task ${shown(refText)} (give its id, or its exact title).`);
}

/** The tasks of one list, in order: the top-level tasks of a project (or of no project), or one task's subtasks. */
async function siblings(em: EntityManager, projectId: string | null, parentId: string | null): Promise<TaskRow[]> {
  const { TaskRow } = await schema();
  const qb = em.createQueryBuilder(TaskRow, 't');
  if (parentId !== null) qb.where('t.parent_id = :parent', { parent: parentId });
  else {
    qb.where('t.parent_id IS NULL');
    if (projectId === null) qb.andWhere('t.project_id IS NULL');
    else qb.andWhere('t.project_id = :project', { project: projectId });
  }
  return qb.orderBy('t.sort_order', 'ASC').addOrderBy('t.created_at', 'ASC').getMany();
}

interface Names {
  projects: Map<string, string>;
  statuses: Map<string, string>;
  /** Each task's linked note ids, in the order they were linked. */
  notes: Map<string, string[]>;
}

async function names(em: EntityManager): Promise<Names> {
  const { TaskNoteRow } = await schema();
  const notes = new Map<string, string[]>();
  for (const l of await em.find(TaskNoteRow, { order: { sort_order: 'ASC', note_id: 'ASC' } }))
    notes.set(l.task_id, [...(notes.get(l.task_id) ?? []), l.note_id]);
  return {
    projects: new Map((await allProjects(em)).map((p) => [p.id, p.name])),
    statuses: new Map((await allStatuses(em)).map((s) => [s.id, s.name])),
    notes,
  };
}

// ---------------------------------------------------------------------------------------------
// Links to notes: by the notes' stable ids, so a rename or move keeps them

interface NoteRef {
  id: string;
  path: string | null;
  title: string | null;
  missing?: true;
}

/** The notes a call names (id, path or title), each once; a filed file (not markdown) is refused. */
async function resolveNotes(ctx: ToolContext, refs: readonly string[]): Promise<NoteRef[]> {
  const vault = await runtimeOf(ctx).vault(ctx);
  const out = new Map<string, NoteRef>();
  for (const r of refs) {
    const { note } = vault.find(r);
    if (note.file_type !== 'markdown') throw new MemoError('VALIDATION', `${shown(note.path)} is a ${note.file_type} file, not a note: a task links to notes.`);
    out.set(note.id, { id: note.id, path: note.path, title: note.title });
  }
  return [...out.values()];
}

/** A task's linked notes as they stand in the index; a note deleted since reads as missing, not dropped. */
async function linkedNotes(ctx: ToolContext, ids: readonly string[]): Promise<NoteRef[]> {
  if (!ids.length) return [];
  const vault = await runtimeOf(ctx).vault(ctx);
  return ids.map((id) => {
    const n = vault.index.note({ id });
    return n ? { id, path: n.path, title: n.title } : { id, path: null, title: null, missing: true };
  });
}

const noteLabels = (notes: readonly NoteRef[]) => notes.map((n) => (n.missing ? `(missing note ${n.id})` : `${n.title} (id ${n.id})`));

async function setNotes(em: EntityManager, taskId: string, ids: readonly string[]): Promise<void> {
  const { TaskNoteRow } = await schema();
  await em.delete(TaskNoteRow, { task_id: taskId });
  const at = now();
  for (const [i, id] of ids.entries()) await em.insert(TaskNoteRow, { task_id: taskId, note_id: id, sort_order: i, created_at: at });
}

function taskOut(t: TaskRow, n: Names) {
  return {
    id: t.id,
    title: t.title,
    description: t.description,
    project_id: t.project_id,
    project_name: t.project_id === null ? null : (n.projects.get(t.project_id) ?? null),
    status_id: t.status_id,
    status_name: t.status_id === null ? null : (n.statuses.get(t.status_id) ?? null),
    parent_id: t.parent_id,
    priority: t.priority,
    due_date: t.due_date,
    due_time: t.due_time,
    time_zone: t.time_zone,
    repeat_rule: t.repeat_rule,
    remind_at: t.remind_at,
    tags: JSON.parse(t.tags) as string[],
    note_ids: n.notes.get(t.id) ?? [],
    completed: t.completed_at !== null,
    completed_at: t.completed_at,
    archived: t.archived_at !== null,
    archived_at: t.archived_at,
    sort_order: t.sort_order,
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}

export async function listTasks(args: ToolArgs['vault_list_tasks'], ctx: ToolContext) {
  const { TaskRow } = await schema();
  const em = (await planningDb(ctx)).manager;
  const qb = em.createQueryBuilder(TaskRow, 't');
  qb.where('1 = 1');
  if (args.project !== undefined) qb.andWhere('t.project_id = :project', { project: (await findProject(em, args.project)).id });
  if (args.status !== undefined) qb.andWhere('t.status_id = :status', { status: (await findStatus(em, args.status)).id });
  if (args.due_from !== undefined) qb.andWhere('t.due_date >= :from', { from: checkDate(args.due_from) });
  if (args.due_to !== undefined) qb.andWhere('t.due_date <= :to', { to: checkDate(args.due_to) });
  if (args.include_completed !== true) qb.andWhere('t.completed_at IS NULL');
  if (args.include_archived !== true) qb.andWhere('t.archived_at IS NULL');
  let rows = await qb.getMany();
  if (args.tag !== undefined) {
    const tag = checkTag(args.tag);
    rows = rows.filter((t) => (JSON.parse(t.tags) as string[]).some((x) => x === tag || x.startsWith(`${tag}/`)));
  }
  // Board order: projects in their order (no project first), each task followed by its subtasks.
  const n = await names(em);
  const projectPlace = new Map((await allProjects(em)).map((p) => [p.id, p.sort_order]));
  const byId = new Map(rows.map((t) => [t.id, t]));
  const missing = [...new Set(rows.filter((t) => t.parent_id !== null && !byId.has(t.parent_id)).map((t) => t.parent_id!))];
  const parents = new Map(
    (missing.length ? await em.createQueryBuilder(TaskRow, 't').where('t.id IN (:...ids)', { ids: missing }).getMany() : []).map((t) => [t.id, t]),
  );
  const key = (t: TaskRow): number[] => {
    const top = t.parent_id === null ? t : (byId.get(t.parent_id) ?? parents.get(t.parent_id) ?? t);
    return [t.project_id === null ? -1 : (projectPlace.get(t.project_id) ?? 0), top.sort_order, top === t ? -1 : t.sort_order];
  };
  const ordered = rows
    .map((t) => ({ t, k: key(t) }))
    .sort((a, b) => a.k[0]! - b.k[0]! || a.k[1]! - b.k[1]! || a.k[2]! - b.k[2]! || a.t.created_at.localeCompare(b.t.created_at))
    .map((x) => x.t);
  const limit = args.limit ?? 200;
  return { tasks: ordered.slice(0, limit).map((t) => taskOut(t, n)), count: ordered.length, ...(ordered.length > limit ? { truncated: true } : {}) };
}

export async function getTask(args: ToolArgs['vault_get_task'], ctx: ToolContext) {
  const em = (await planningDb(ctx)).manager;
  const t = await findTask(em, args.task);
  const n = await names(em);
  return {
    ...taskOut(t, n),
    notes: await linkedNotes(ctx, n.notes.get(t.id) ?? []),
    subtasks: (await siblings(em, t.project_id, t.id)).map((s) => taskOut(s, n)),
  };
}

// ---------------------------------------------------------------------------------------------
// Checks

function checkDate(d: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(d);
  const date = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : null;
  if (!m || !date || date.getUTCDate() !== Number(m[3]) || date.getUTCMonth() !== Number(m[2]) - 1)
    throw new MemoError('VALIDATION', `${shown(d)} is not a date: write YYYY-MM-DD (2026-12-01).`);
  return d;
}

function checkTime(t: string): string {
  if (!/^([01]\d|2[0-3]):[0-5]\d$/.test(t)) throw new MemoError('VALIDATION', `${shown(t)} is not a time of day: write HH:MM, 24 h (09:30).`);
  return t;
}

function checkZone(z: string): string {
  try {
    new Intl.DateTimeFormat('en', { timeZone: z });
  } catch {
    throw new MemoError('VALIDATION', `${shown(z)} is not an IANA time zone (Europe/Paris, America/New_York, UTC).`);
  }
  return z;
}

function checkRule(rule: string): string {
  const r = rule
    .trim()
    .replace(/^RRULE:/i, '')
    .toUpperCase();
  if (!/^[A-Z]+=[A-Z0-9,+:-]+(;[A-Z]+=[A-Z0-9,+:-]+)*$/.test(r) || !/(^|;)FREQ=(SECONDLY|MINUTELY|HOURLY|DAILY|WEEKLY|MONTHLY|YEARLY)(;|$)/.test(r))
    throw new MemoError('VALIDATION', `${shown(rule)} is not a repeat rule: an RFC 5545 RRULE with a FREQ, such as FREQ=WEEKLY;BYDAY=MO.`);
  return r;
}

type TaskFields = Pick<TaskRow, 'title' | 'description' | 'priority' | 'due_date' | 'due_time' | 'time_zone' | 'repeat_rule' | 'remind_at' | 'status_id'> & {
  tags: string[];
};

interface FieldArgs {
  title?: string;
  description?: string | null;
  priority?: number;
  due_date?: string | null;
  due_time?: string | null;
  time_zone?: string | null;
  repeat_rule?: string | null;
  remind_at?: string | null;
  tags?: string[];
  status?: string | null;
}

/** The fields a call sets (null clears), checked; a due time needs a due date, and clearing the date clears the time. */
async function proposedFields(em: EntityManager, args: FieldArgs, current: TaskFields | null): Promise<Partial<TaskFields>> {
  const out: Partial<TaskFields> = {};
  if (args.title !== undefined) out.title = cleanName(args.title, 'task title');
  if (args.description !== undefined) out.description = args.description;
  if (args.priority !== undefined) out.priority = args.priority;
  if (args.due_date !== undefined) out.due_date = args.due_date === null ? null : checkDate(args.due_date);
  if (args.due_time !== undefined) out.due_time = args.due_time === null ? null : checkTime(args.due_time);
  if (args.due_date === null && args.due_time === undefined && current?.due_time) out.due_time = null;
  if (args.time_zone !== undefined) out.time_zone = args.time_zone === null ? null : checkZone(args.time_zone);
  if (args.repeat_rule !== undefined) out.repeat_rule = args.repeat_rule === null ? null : checkRule(args.repeat_rule);
  if (args.remind_at !== undefined) {
    out.remind_at = args.remind_at === null ? null : checkMoment(args.remind_at);
    // A new reminder time must be to come; the one a task already has may be passed again as it is.
    if (out.remind_at !== null && out.remind_at !== current?.remind_at) requireFuture(out.remind_at, 'remind_at');
  }
  if (args.tags !== undefined) out.tags = [...new Set(args.tags.map(checkTag))];
  if (args.status !== undefined) out.status_id = args.status === null ? null : (await findStatus(em, args.status)).id;
  const dueDate = out.due_date !== undefined ? out.due_date : (current?.due_date ?? null);
  const dueTime = out.due_time !== undefined ? out.due_time : (current?.due_time ?? null);
  if (dueTime !== null && dueDate === null) throw new MemoError('VALIDATION', 'A due time needs a due date (due_date).');
  return out;
}

const fieldsOf = (t: TaskRow): TaskFields => ({
  title: t.title,
  description: t.description,
  priority: t.priority,
  due_date: t.due_date,
  due_time: t.due_time,
  time_zone: t.time_zone,
  repeat_rule: t.repeat_rule,
  remind_at: t.remind_at,
  status_id: t.status_id,
  tags: JSON.parse(t.tags) as string[],
});

/** Field rows as a person reads them: a status by its name, not its id. */
function shownFields(f: Partial<TaskFields>, n: Names): Record<string, unknown> {
  const { status_id, ...rest } = f;
  return { ...rest, ...(status_id !== undefined ? { status: status_id === null ? null : (n.statuses.get(status_id) ?? status_id) } : {}) };
}

function onlyChanged(before: TaskFields, proposed: Partial<TaskFields>): Partial<TaskFields> {
  return Object.fromEntries(Object.entries(proposed).filter(([k, v]) => JSON.stringify(before[k as keyof TaskFields] ?? null) !== JSON.stringify(v ?? null)));
}

const head = (t: TaskRow) => `Task ${t.title} (id ${t.id})`;

// ---------------------------------------------------------------------------------------------
// Create, update

async function planCreate(em: EntityManager, args: ToolArgs['vault_create_task']) {
  const fields = await proposedFields(em, args, null);
  const parent = args.parent !== undefined ? await findTask(em, args.parent) : null;
  if (parent?.parent_id) throw new MemoError('VALIDATION', `${shown(parent.title)} is itself a subtask; subtasks are one level deep.`);
  let projectId = args.project !== undefined ? (await findProject(em, args.project)).id : null;
  if (parent) {
    if (args.project !== undefined && projectId !== parent.project_id)
      throw new MemoError('VALIDATION', `A subtask is in its parent's project; ${shown(parent.title)} is not in that project.`);
    projectId = parent.project_id;
  }
  return { fields, parent, projectId };
}

export const createTask: Impl<ToolArgs['vault_create_task']> = {
  assess: async (args, ctx) => {
    await assessWith(planCreate)(args, ctx);
    if (args.notes) await resolveNotes(ctx, args.notes);
    return null;
  },
  preview: async (args, ctx) => {
    const em = (await planningDb(ctx)).manager;
    const { fields, parent, projectId } = await planCreate(em, args);
    const { title, ...rest } = fields;
    const n = await names(em);
    const notes = args.notes?.length ? noteLabels(await resolveNotes(ctx, args.notes)) : undefined;
    return fieldsPreview(
      'New task',
      {},
      {
        title,
        project: projectId === null ? null : n.projects.get(projectId),
        parent: parent ? `${parent.title} (id ${parent.id})` : null,
        ...shownFields(rest, n),
        notes,
      },
    );
  },
  run: thenRemind(
    inPlanning(async (em, args, ctx) => {
      const { TaskRow } = await schema();
      const { fields, parent, projectId } = await planCreate(em, args);
      const list = await siblings(em, projectId, parent?.id ?? null);
      const at = now();
      const row = em.create(TaskRow, {
        id: newId(),
        project_id: projectId,
        parent_id: parent?.id ?? null,
        status_id: fields.status_id ?? null,
        title: fields.title!,
        description: fields.description ?? null,
        priority: fields.priority ?? 0,
        due_date: fields.due_date ?? null,
        due_time: fields.due_time ?? null,
        time_zone: fields.time_zone ?? null,
        repeat_rule: fields.repeat_rule ?? null,
        remind_at: fields.remind_at ?? null,
        tags: JSON.stringify(fields.tags ?? []),
        completed_at: null,
        archived_at: null,
        sort_order: list.length,
        created_at: at,
        updated_at: at,
      });
      await em.insert(TaskRow, row);
      await renumber(em, TaskRow, placeAt(list, row, args.position));
      const notes = args.notes ? await resolveNotes(ctx, args.notes) : [];
      await setNotes(
        em,
        row.id,
        notes.map((x) => x.id),
      );
      return { ...taskOut(row, await names(em)), notes, created: true, summary: `created task ${row.title}` };
    }),
  ),
};

/** The note links an update asks for, when they differ from the task's: ids before and after. */
async function noteChange(ctx: ToolContext, n: Names, taskId: string, refs: readonly string[] | null | undefined) {
  if (refs === undefined) return null;
  const before = n.notes.get(taskId) ?? [];
  const after = refs === null ? [] : (await resolveNotes(ctx, refs)).map((x) => x.id);
  return JSON.stringify(before) === JSON.stringify(after) ? null : { before, after };
}

export const updateTask: Impl<ToolArgs['vault_update_task']> = {
  assess: async (args, ctx) => {
    const em = (await planningDb(ctx)).manager;
    const t = await findTask(em, args.task);
    await proposedFields(em, args, fieldsOf(t));
    await noteChange(ctx, await names(em), t.id, args.notes);
    return null;
  },
  preview: async (args, ctx) => {
    const em = (await planningDb(ctx)).manager;
    const t = await findTask(em, args.task);
    const before = fieldsOf(t);
    const changes = onlyChanged(before, await proposedFields(em, args, before));
    const n = await names(em);
    const notes = await noteChange(ctx, n, t.id, args.notes);
    rememberFields(ctx, {
      ...Object.fromEntries(Object.keys(changes).map((k) => [k, before[k as keyof TaskFields]])),
      ...(notes ? { note_ids: notes.before } : {}),
    });
    const shownNotes = async (ids: string[]) => (ids.length ? noteLabels(await linkedNotes(ctx, ids)) : null);
    return fieldsPreview(
      head(t),
      { ...shownFields(before, n), ...(notes ? { notes: await shownNotes(notes.before) } : {}) },
      { ...shownFields(changes, n), ...(notes ? { notes: await shownNotes(notes.after) } : {}) },
    );
  },
  run: thenRemind(
    inPlanning(async (em, args, ctx) => {
      const { TaskRow } = await schema();
      const t = await findTask(em, args.task);
      const before = fieldsOf(t);
      const n = await names(em);
      checkFields(ctx, `The task ${shown(t.title)}`, { ...before, note_ids: n.notes.get(t.id) ?? [] });
      const changes = onlyChanged(before, await proposedFields(em, args, before));
      const notes = await noteChange(ctx, n, t.id, args.notes);
      const { tags, ...rest } = changes;
      if (Object.keys(changes).length || notes)
        await em.update(TaskRow, { id: t.id }, { ...rest, ...(tags !== undefined ? { tags: JSON.stringify(tags) } : {}), updated_at: now() });
      if (notes) await setNotes(em, t.id, notes.after);
      const after = (await em.findOneBy(TaskRow, { id: t.id }))!;
      return {
        ...taskOut(after, await names(em)),
        changed: [...Object.keys(changes), ...(notes ? ['notes'] : [])],
        summary: `updated task ${after.title}`,
      };
    }),
  ),
};

// ---------------------------------------------------------------------------------------------
// Delete

export const deleteTask: Impl<ToolArgs['vault_delete_task']> = {
  assess: assessWith((em, args) => findTask(em, args.task)),
  preview: async (args, ctx) => {
    const em = (await planningDb(ctx)).manager;
    const t = await findTask(em, args.task);
    const subs = await siblings(em, t.project_id, t.id);
    const lines = [`Deletes the ${t.parent_id ? 'subtask' : 'task'} ${t.title} (id ${t.id})${t.completed_at ? ', completed' : ''}.`];
    lines.push(...(subs.length ? [`Subtasks lost: ${subs.length}:`, ...listed(subs.map((s) => `${s.title} (id ${s.id})`))] : []));
    if (t.description) lines.push(`Its description (${t.description.length} characters) is lost.`);
    const n = await names(em);
    const linked = [t, ...subs].flatMap((x) => n.notes.get(x.id) ?? []);
    if (linked.length)
      lines.push(`Links to notes lost: ${linked.length} (the notes stay):`, ...listed(noteLabels(await linkedNotes(ctx, [...new Set(linked)]))));
    rememberFields(ctx, { subtasks: subs.map((s) => s.id).sort() });
    return { kind: 'delete', text: lines.join('\n') };
  },
  run: inPlanning(async (em, args, ctx) => {
    const { TaskRow } = await schema();
    const t = await findTask(em, args.task);
    const subs = await siblings(em, t.project_id, t.id);
    checkFields(ctx, `The task ${shown(t.title)}'s subtasks`, { subtasks: subs.map((s) => s.id).sort() });
    const { TaskNoteRow } = await schema();
    for (const x of [t, ...subs]) await em.delete(TaskNoteRow, { task_id: x.id });
    await em.delete(TaskRow, { parent_id: t.id });
    await em.delete(TaskRow, { id: t.id });
    await renumber(em, TaskRow, await siblings(em, t.project_id, t.parent_id));
    return { id: t.id, title: t.title, deleted: true, subtasks_deleted: subs.length, summary: `deleted task ${t.title}` };
  }),
};

// ---------------------------------------------------------------------------------------------
// Complete, uncomplete, archive, unarchive: one timestamp set or cleared

/** A project's or status's name by id (the id itself when it is gone; null for none). */
const nameIn = (map: Map<string, string>, id: string | null) => (id === null ? null : (map.get(id) ?? id));

/**
 * Where completing or reopening a task moves it on the board (README: finished tasks go to a status
 * marked done): completed, into the first status marked done, unless it is in one; reopened out of a
 * done status, into the first open one (none if there is none). Undefined: its status stays.
 */
async function statusOnToggle(em: EntityManager, t: TaskRow, on: boolean): Promise<string | null | undefined> {
  const statuses = await allStatuses(em);
  const current = statuses.find((s) => s.id === t.status_id);
  if (on) return current?.is_done ? undefined : statuses.find((s) => s.is_done)?.id;
  return current?.is_done ? (statuses.find((s) => !s.is_done)?.id ?? null) : undefined;
}

function toggle(column: 'completed_at' | 'archived_at', field: 'completed' | 'archived', on: boolean, verb: string): Impl<{ task: string }> {
  const moves = column === 'completed_at';
  return {
    assess: assessWith((em, args) => findTask(em, args.task)),
    preview: async (args, ctx) => {
      const em = (await planningDb(ctx)).manager;
      const t = await findTask(em, args.task);
      const was = t[column] !== null;
      rememberFields(ctx, { [field]: was, ...(moves ? { status_id: t.status_id } : {}) });
      const status = moves && was !== on ? await statusOnToggle(em, t, on) : undefined;
      const n = status !== undefined ? await names(em) : null;
      const p = fieldsPreview(
        head(t),
        { [field]: was, ...(n ? { status: nameIn(n.statuses, t.status_id) } : {}) },
        { [field]: on, ...(n ? { status: nameIn(n.statuses, status ?? null) } : {}) },
      );
      if (column === 'completed_at' && on && !was) {
        const extra: string[] = [];
        const open = (await siblings(em, t.project_id, t.id)).filter((s) => s.completed_at === null).length;
        if (open) extra.push(`(${open} open subtask(s) stay open)`);
        const repeat = await repeatOf(t);
        if (repeat) extra.push(`Repeats (${t.repeat_rule}): the next occurrence, due ${dueText(repeat)}, is created open and takes the repeat rule.`);
        else if (t.repeat_rule && t.due_date) extra.push(`Repeats (${t.repeat_rule}), but this is the last occurrence: none is created.`);
        if (extra.length) return { kind: 'fields', text: [p.text, ...extra].join('\n') } satisfies Preview;
      }
      return p;
    },
    run: thenRemind(
      inPlanning(async (em, args, ctx) => {
        const { TaskRow } = await schema();
        const t = await findTask(em, args.task);
        const was = t[column] !== null;
        checkFields(ctx, `The task ${shown(t.title)}`, { [field]: was, ...(moves ? { status_id: t.status_id } : {}) });
        let next: TaskRow | null = null;
        const changed: string[] = [];
        if (was !== on) {
          const at = now();
          const repeat = column === 'completed_at' && on ? await repeatOf(t) : null;
          const status = moves ? await statusOnToggle(em, t, on) : undefined;
          // The next occurrence is open: it keeps the status the task had before it was done.
          const openStatus = t.status_id;
          t[column] = on ? at : null;
          t.updated_at = at;
          changed.push(field);
          if (status !== undefined) {
            t.status_id = status;
            changed.push('status');
          }
          // Reopened (or unarchived) after its reminder time passed: that reminder is not given late now.
          // (By the kernel's clock, the one the reminder service goes by.)
          const stale = !on && t.remind_at !== null && t.remind_at <= new Date(runtimeOf(ctx).api.clock.now()).toISOString();
          if (stale) {
            t.remind_at = null;
            changed.push('remind_at');
          }
          await em.update(
            TaskRow,
            { id: t.id },
            { [column]: t[column], updated_at: at, ...(status !== undefined ? { status_id: status } : {}), ...(stale ? { remind_at: null } : {}) },
          );
          if (repeat) next = await createNextOccurrence(em, t, repeat, openStatus);
        }
        const n = await names(em);
        return {
          ...taskOut(t, n),
          changed,
          ...(next ? { next_occurrence: taskOut(next, n) } : {}),
          summary: `${verb} task ${t.title}${changed.includes('status') ? ` (now in ${nameIn(n.statuses, t.status_id) ?? 'no status'})` : ''}${next ? `; the next occurrence is due ${next.due_date!}` : ''}`,
        };
      }),
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// Repeating tasks: completing one creates the next occurrence

/** ical.js (the rule's expansion) is imported on the first repeating task, not when the pack loads. */
async function repeatOf(t: TaskRow): Promise<NextOccurrence | null> {
  if (!t.repeat_rule || !t.due_date) return null;
  const { nextOccurrence } = await import('./task-repeat.js');
  return nextOccurrence(t.repeat_rule, t.due_date, t.due_time);
}

const dueText = (d: { due_date: string; due_time: string | null }) => (d.due_time ? `${d.due_date} ${d.due_time}` : d.due_date);

/**
 * A repeating task's reminder for its next occurrence: as long before (or after) the new due date as it
 * was before the old one (whole days, so a 09:00 reminder stays at 09:00 UTC); none when there was none.
 */
function shiftedReminder(t: TaskRow, nextDue: string): string | null {
  if (!t.remind_at || !t.due_date) return null;
  const days = Math.round((Date.parse(`${nextDue}T00:00:00Z`) - Date.parse(`${t.due_date}T00:00:00Z`)) / 86_400_000);
  if (!Number.isFinite(days)) return null;
  const at = new Date(Date.parse(t.remind_at) + days * 86_400_000).toISOString();
  // Completed so late that the next one's reminder has passed too: none, rather than one given at once, late.
  return at > now() ? at : null;
}

/**
 * The next occurrence: an open copy right after the completed task, due on the rule's next day, with
 * its open subtasks and note links copied. The rule moves to it, so completing the finished one again
 * (after reopening it) makes no second copy.
 */
async function createNextOccurrence(em: EntityManager, t: TaskRow, repeat: NextOccurrence, statusId: string | null): Promise<TaskRow> {
  const { TaskRow } = await schema();
  const at = now();
  const next = em.create(TaskRow, {
    ...t,
    status_id: statusId,
    id: newId(),
    due_date: repeat.due_date,
    due_time: repeat.due_time,
    repeat_rule: repeat.repeat_rule,
    remind_at: shiftedReminder(t, repeat.due_date),
    completed_at: null,
    archived_at: null,
    created_at: at,
    updated_at: at,
  });
  await em.insert(TaskRow, next);
  await em.update(TaskRow, { id: t.id }, { repeat_rule: null });
  t.repeat_rule = null;
  const list = (await siblings(em, t.project_id, t.parent_id)).filter((s) => s.id !== next.id);
  await renumber(em, TaskRow, placeAt(list, next, list.findIndex((s) => s.id === t.id) + 1));
  await copyChildren(em, t, next, at);
  return next;
}

/** Copies a task's subtasks (open) and note links onto `copy`. Returns the new subtasks' ids. */
async function copyChildren(em: EntityManager, from: TaskRow, copy: TaskRow, at: string): Promise<string[]> {
  const { TaskRow, TaskNoteRow } = await schema();
  const links = async (a: string, b: string) => {
    for (const l of await em.find(TaskNoteRow, { where: { task_id: a } })) await em.insert(TaskNoteRow, { ...l, task_id: b });
  };
  await links(from.id, copy.id);
  const ids: string[] = [];
  for (const s of await siblings(em, from.project_id, from.id)) {
    // A subtask's reminder is copied only while it is still to come (a passed one would be delivered at once).
    const remind = s.remind_at && s.remind_at > at ? s.remind_at : null;
    const c = em.create(TaskRow, {
      ...s,
      id: newId(),
      parent_id: copy.id,
      remind_at: remind,
      completed_at: null,
      archived_at: null,
      created_at: at,
      updated_at: at,
    });
    await em.insert(TaskRow, c);
    await links(s.id, c.id);
    ids.push(c.id);
  }
  return ids;
}

export const completeTask = toggle('completed_at', 'completed', true, 'completed');
export const uncompleteTask = toggle('completed_at', 'completed', false, 'reopened');
export const archiveTask = toggle('archived_at', 'archived', true, 'archived');
export const unarchiveTask = toggle('archived_at', 'archived', false, 'unarchived');

// ---------------------------------------------------------------------------------------------
// Move, reorder

async function planMove(em: EntityManager, args: ToolArgs['vault_move_task']) {
  if (args.project === undefined && args.status === undefined && args.position === undefined)
    throw new MemoError('VALIDATION', 'Say where to: project (null for none), status (null for none) and/or position.');
  const t = await findTask(em, args.task);
  const projectId = args.project === undefined ? t.project_id : args.project === null ? null : (await findProject(em, args.project)).id;
  if (t.parent_id !== null && projectId !== t.project_id)
    throw new MemoError('VALIDATION', `${shown(t.title)} is a subtask: it stays in its parent's project. Move the parent task instead.`);
  const statusId = args.status === undefined ? t.status_id : args.status === null ? null : (await findStatus(em, args.status)).id;
  const list = (await siblings(em, projectId, t.parent_id)).filter((s) => s.id !== t.id);
  const position = args.position ?? (projectId === t.project_id ? Math.max(0, t.sort_order) : list.length);
  return { t, projectId, statusId, list, position: Math.min(position, list.length) };
}

export const moveTask: Impl<ToolArgs['vault_move_task']> = {
  assess: assessWith(planMove),
  preview: async (args, ctx) => {
    const em = (await planningDb(ctx)).manager;
    const { t, projectId, statusId, position } = await planMove(em, args);
    const n = await names(em);
    const before = { project: nameIn(n.projects, t.project_id), status: nameIn(n.statuses, t.status_id), position: t.sort_order };
    const after = { project: nameIn(n.projects, projectId), status: nameIn(n.statuses, statusId), position };
    rememberFields(ctx, { project_id: t.project_id, status_id: t.status_id });
    const subs = (await siblings(em, t.project_id, t.id)).length;
    const rows = fieldRows(before, after);
    const extra = projectId !== t.project_id && subs ? [`(its ${subs} subtask(s) move with it)`] : [];
    return { kind: 'fields', text: [head(t), ...(rows.length ? rows : ['(no field changes)']), ...extra].join('\n') };
  },
  run: inPlanning(async (em, args, ctx) => {
    const { TaskRow } = await schema();
    const { t, projectId, statusId, list, position } = await planMove(em, args);
    checkFields(ctx, `The task ${shown(t.title)}`, { project_id: t.project_id, status_id: t.status_id });
    const from = t.project_id;
    const at = now();
    await em.update(TaskRow, { id: t.id }, { project_id: projectId, status_id: statusId, updated_at: at });
    if (projectId !== from) {
      await em.update(TaskRow, { parent_id: t.id }, { project_id: projectId });
      await renumber(em, TaskRow, await siblings(em, from, null));
    }
    Object.assign(t, { project_id: projectId, status_id: statusId, updated_at: at });
    await renumber(em, TaskRow, placeAt(list, t, position));
    return { ...taskOut(t, await names(em)), summary: `moved task ${t.title}` };
  }),
};

async function planReorder(em: EntityManager, ids: string[]) {
  const first = await findTask(em, ids[0]!);
  const list = await siblings(em, first.project_id, first.parent_id);
  const next = reordered(list, ids, (r) => {
    const hit = list.find((t) => t.id === r) ?? list.filter((t) => t.title.toLowerCase() === r.trim().toLowerCase());
    if (Array.isArray(hit)) {
      if (hit.length === 1) return hit[0]!;
      throw new MemoError(
        'VALIDATION',
        `${shown(r)} is not one task of the same list as ${shown(first.title)} (the top-level tasks of one project, or one task's subtasks); give ids from one list.`,
      );
    }
    return hit;
  });
  return { first, list, next };
}

export const reorderTasks: Impl<ToolArgs['vault_reorder_tasks']> = {
  assess: assessWith((em, args) => planReorder(em, args.ids)),
  preview: async (args, ctx) => {
    const { list, next } = await planReorder((await planningDb(ctx)).manager, args.ids);
    return fieldsPreview('Task order', { order: list.map((t) => t.title) }, { order: next.map((t) => t.title) });
  },
  run: inPlanning(async (em, args) => {
    const { TaskRow } = await schema();
    const { next } = await planReorder(em, args.ids);
    await renumber(em, TaskRow, next);
    const n = await names(em);
    return { tasks: next.map((t) => taskOut(t, n)), summary: 'reordered tasks' };
  }),
};

// ---------------------------------------------------------------------------------------------
// Duplicate, convert between task and subtask

async function planDuplicate(em: EntityManager, args: ToolArgs['vault_duplicate_task']) {
  const t = await findTask(em, args.task);
  const title = args.title !== undefined ? cleanName(args.title, 'task title') : t.title;
  return { t, title, subs: await siblings(em, t.project_id, t.id) };
}

export const duplicateTask: Impl<ToolArgs['vault_duplicate_task']> = {
  assess: assessWith(planDuplicate),
  preview: async (args, ctx) => {
    const em = (await planningDb(ctx)).manager;
    const { t, title, subs } = await planDuplicate(em, args);
    const n = await names(em);
    const { title: _title, ...rest } = fieldsOf(t);
    const p = fieldsPreview(
      `New task, a copy of ${head(t)}`,
      {},
      { title, project: t.project_id === null ? null : n.projects.get(t.project_id), ...shownFields(rest, n) },
    );
    return subs.length ? { kind: 'fields', text: `${p.text}\n(with copies of its ${subs.length} subtask(s), open)` } : p;
  },
  run: inPlanning(async (em, args) => {
    const { TaskRow } = await schema();
    const { t, title } = await planDuplicate(em, args);
    const at = now();
    // The copy is open and unarchived, right after the original; its subtasks are copied in their order.
    // A reminder already passed is not copied: the copy would be delivered at once, late.
    const remind = t.remind_at && t.remind_at > at ? t.remind_at : null;
    const copy = em.create(TaskRow, { ...t, id: newId(), title, remind_at: remind, completed_at: null, archived_at: null, created_at: at, updated_at: at });
    await em.insert(TaskRow, copy);
    const list = (await siblings(em, t.project_id, t.parent_id)).filter((s) => s.id !== copy.id);
    await renumber(em, TaskRow, placeAt(list, copy, list.findIndex((s) => s.id === t.id) + 1));
    const subIds = await copyChildren(em, t, copy, at);
    return { ...taskOut(copy, await names(em)), duplicated_from: t.id, subtask_ids: subIds, summary: `duplicated task ${t.title}` };
  }),
};

async function planToSubtask(em: EntityManager, args: ToolArgs['vault_convert_task_to_subtask']) {
  const t = await findTask(em, args.task);
  const parent = await findTask(em, args.parent);
  if (t.parent_id !== null) throw new MemoError('VALIDATION', `${shown(t.title)} is already a subtask; use vault_move_task to move it within its list.`);
  if (parent.id === t.id) throw new MemoError('VALIDATION', 'A task cannot be its own subtask.');
  if (parent.parent_id !== null) throw new MemoError('VALIDATION', `${shown(parent.title)} is itself a subtask; subtasks are one level deep.`);
  const subs = await siblings(em, t.project_id, t.id);
  if (subs.length)
    throw new MemoError('VALIDATION', `${shown(t.title)} has ${subs.length} subtask(s); subtasks are one level deep. Make them tasks or move them first.`);
  return { t, parent };
}

export const convertTaskToSubtask: Impl<ToolArgs['vault_convert_task_to_subtask']> = {
  assess: assessWith(planToSubtask),
  preview: async (args, ctx) => {
    const em = (await planningDb(ctx)).manager;
    const { t, parent } = await planToSubtask(em, args);
    const n = await names(em);
    const project = (id: string | null) => (id === null ? null : (n.projects.get(id) ?? id));
    rememberFields(ctx, { parent_id: t.parent_id, project_id: t.project_id });
    return fieldsPreview(
      head(t),
      { parent: null, project: project(t.project_id) },
      { parent: `${parent.title} (id ${parent.id})`, project: project(parent.project_id) },
    );
  },
  run: inPlanning(async (em, args, ctx) => {
    const { TaskRow } = await schema();
    const { t, parent } = await planToSubtask(em, args);
    checkFields(ctx, `The task ${shown(t.title)}`, { parent_id: t.parent_id, project_id: t.project_id });
    const from = t.project_id;
    const list = await siblings(em, parent.project_id, parent.id);
    Object.assign(t, { parent_id: parent.id, project_id: parent.project_id, updated_at: now() });
    await em.update(TaskRow, { id: t.id }, { parent_id: t.parent_id, project_id: t.project_id, updated_at: t.updated_at });
    await renumber(em, TaskRow, await siblings(em, from, null));
    await renumber(em, TaskRow, [...list, t]);
    return { ...taskOut(t, await names(em)), summary: `made ${t.title} a subtask of ${parent.title}` };
  }),
};

async function planToTask(em: EntityManager, args: ToolArgs['vault_convert_subtask_to_task']) {
  const t = await findTask(em, args.task);
  if (t.parent_id === null) throw new MemoError('VALIDATION', `${shown(t.title)} is not a subtask.`);
  const parent = await findTask(em, t.parent_id);
  return { t, parent };
}

export const convertSubtaskToTask: Impl<ToolArgs['vault_convert_subtask_to_task']> = {
  assess: assessWith(planToTask),
  preview: async (args, ctx) => {
    const { t, parent } = await planToTask((await planningDb(ctx)).manager, args);
    rememberFields(ctx, { parent_id: t.parent_id });
    return fieldsPreview(head(t), { parent: `${parent.title} (id ${parent.id})` }, { parent: null });
  },
  run: inPlanning(async (em, args, ctx) => {
    const { TaskRow } = await schema();
    const { t, parent } = await planToTask(em, args);
    checkFields(ctx, `The task ${shown(t.title)}`, { parent_id: t.parent_id });
    const list = await siblings(em, t.project_id, null);
    Object.assign(t, { parent_id: null, updated_at: now() });
    await em.update(TaskRow, { id: t.id }, { parent_id: null, updated_at: t.updated_at });
    await renumber(em, TaskRow, await siblings(em, t.project_id, parent.id));
    // It lands right after its former parent unless a position is given.
    await renumber(em, TaskRow, placeAt(list, t, args.position ?? list.findIndex((s) => s.id === parent.id) + 1));
    return { ...taskOut(t, await names(em)), summary: `made ${t.title} a task` };
  }),
};
