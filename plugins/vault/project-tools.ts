/**
 * Projects: list (with icon, home note and linked-item counts, as the seed's project views need),
 * get, create, update, delete (with its tasks and links), archive, reorder.
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
  planningDb,
  rememberFields,
  renumber,
  reordered,
  schema,
  type Impl,
} from './planning-store.js';
import type { ProjectRow } from './schema.js';
import { allStatuses } from './status-tools.js';
import type { ToolArgs } from './tool-args.js';
import { shown } from './vault.js';

export async function allProjects(em: EntityManager): Promise<ProjectRow[]> {
  const { ProjectRow } = await schema();
  return em.find(ProjectRow, { order: { sort_order: 'ASC', created_at: 'ASC' } });
}

export async function findProject(em: EntityManager, refText: string): Promise<ProjectRow> {
  return pick(await allProjects(em), refText, 'project', 'name');
}

interface Counts {
  tasks: Map<string, { all: number; open: number }>;
  links: Map<string, { notes: number; files: number; events: number }>;
}

/** task_count is every task of the project (subtasks and archived ones included); open_task_count those neither completed nor archived. */
async function counts(em: EntityManager): Promise<Counts> {
  const { TaskRow, ProjectLinkRow } = await schema();
  const tasks = await em
    .createQueryBuilder(TaskRow, 't')
    .select('t.project_id', 'id')
    .addSelect('COUNT(*)', 'n')
    .addSelect('SUM(CASE WHEN t.completed_at IS NULL AND t.archived_at IS NULL THEN 1 ELSE 0 END)', 'open')
    .where('t.project_id IS NOT NULL')
    .groupBy('t.project_id')
    .getRawMany<{ id: string; n: number | string; open: number | string }>();
  const links = await em
    .createQueryBuilder(ProjectLinkRow, 'l')
    .select('l.project_id', 'id')
    .addSelect('l.item_type', 'type')
    .addSelect('COUNT(*)', 'n')
    .groupBy('l.project_id')
    .addGroupBy('l.item_type')
    .getRawMany<{ id: string; type: string; n: number | string }>();
  const out: Counts = { tasks: new Map(tasks.map((t) => [t.id, { all: Number(t.n), open: Number(t.open) }])), links: new Map() };
  for (const l of links) {
    const c = out.links.get(l.id) ?? { notes: 0, files: 0, events: 0 };
    if (l.type === 'note') c.notes += Number(l.n);
    else if (l.type === 'file') c.files += Number(l.n);
    else if (l.type === 'calendar_event') c.events += Number(l.n);
    out.links.set(l.id, c);
  }
  return out;
}

function projectOut(p: ProjectRow, c?: Counts) {
  const tasks = c?.tasks.get(p.id) ?? { all: 0, open: 0 };
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    color: p.color,
    icon: p.icon,
    home_note_id: p.home_note_id,
    archived: p.archived_at !== null,
    archived_at: p.archived_at,
    sort_order: p.sort_order,
    ...(c ? { task_count: tasks.all, open_task_count: tasks.open, linked_counts: c.links.get(p.id) ?? { notes: 0, files: 0, events: 0 } } : {}),
  };
}

export async function listProjects(args: ToolArgs['vault_list_projects'], ctx: ToolContext) {
  const em = (await planningDb(ctx)).manager;
  const c = await counts(em);
  const rows = (await allProjects(em)).filter((p) => args.include_archived === true || p.archived_at === null);
  return { projects: rows.map((p) => projectOut(p, c)) };
}

export async function getProject(args: ToolArgs['vault_get_project'], ctx: ToolContext) {
  const { TaskRow } = await schema();
  const em = (await planningDb(ctx)).manager;
  const p = await findProject(em, args.project);
  const byStatus = await em
    .createQueryBuilder(TaskRow, 't')
    .select('t.status_id', 'id')
    .addSelect('COUNT(*)', 'n')
    .where('t.project_id = :id', { id: p.id })
    .groupBy('t.status_id')
    .getRawMany<{ id: string | null; n: number | string }>();
  const names = new Map((await allStatuses(em)).map((s) => [s.id, s.name]));
  return {
    ...projectOut(p, await counts(em)),
    tasks_by_status: byStatus.map((r) => ({ status_id: r.id, status_name: r.id === null ? null : (names.get(r.id) ?? null), count: Number(r.n) })),
  };
}

type Fields = Pick<ProjectRow, 'name' | 'description' | 'color' | 'icon'>;

function proposedProject(args: { name?: string; description?: string | null; color?: string | null; icon?: string | null }): Partial<Fields> {
  return {
    ...(args.name !== undefined ? { name: cleanName(args.name, 'project name') } : {}),
    ...(args.description !== undefined ? { description: args.description } : {}),
    ...(args.color !== undefined ? { color: args.color } : {}),
    ...(args.icon !== undefined ? { icon: args.icon } : {}),
  };
}

const shownProject = (p: ProjectRow): Fields => ({ name: p.name, description: p.description, color: p.color, icon: p.icon });

export const createProject: Impl<ToolArgs['vault_create_project']> = {
  assess: assessWith((_em, args) => Promise.resolve(proposedProject(args))),
  preview: (args) => {
    const f = proposedProject(args);
    return Promise.resolve(
      fieldsPreview('New project', {}, { name: f.name, description: f.description ?? null, color: f.color ?? null, icon: f.icon ?? null }),
    );
  },
  run: inPlanning(async (em, args) => {
    const { ProjectRow } = await schema();
    const rows = await allProjects(em);
    const f = proposedProject(args);
    const row = em.create(ProjectRow, {
      id: newId(),
      name: f.name!,
      description: f.description ?? null,
      color: f.color ?? null,
      icon: f.icon ?? null,
      home_note_id: null,
      archived_at: null,
      sort_order: rows.length,
      created_at: now(),
    });
    await em.insert(ProjectRow, row);
    return { ...projectOut(row), created: true, summary: `created project ${row.name}` };
  }),
};

export const updateProject: Impl<ToolArgs['vault_update_project']> = {
  assess: assessWith(async (em, args) => {
    await findProject(em, args.project);
    proposedProject(args);
  }),
  preview: async (args, ctx) => {
    const p = await findProject((await planningDb(ctx)).manager, args.project);
    const before = shownProject(p);
    const changes = changesOf(before, proposedProject(args));
    rememberFields(ctx, Object.fromEntries(Object.keys(changes).map((k) => [k, before[k as keyof Fields]])));
    return fieldsPreview(`Project ${p.name} (id ${p.id})`, before, changes);
  },
  run: inPlanning(async (em, args, ctx) => {
    const { ProjectRow } = await schema();
    const p = await findProject(em, args.project);
    const before = shownProject(p);
    checkFields(ctx, `The project ${shown(p.name)}`, { ...before });
    const changes = changesOf(before, proposedProject(args));
    if (Object.keys(changes).length) await em.update(ProjectRow, { id: p.id }, changes);
    return { ...projectOut({ ...p, ...changes }), changed: Object.keys(changes), summary: `updated project ${changes.name ?? p.name}` };
  }),
};

async function deletePlan(em: EntityManager, refText: string) {
  const { TaskRow, ProjectLinkRow } = await schema();
  const p = await findProject(em, refText);
  const tasks = await em.find(TaskRow, { where: { project_id: p.id }, order: { sort_order: 'ASC' } });
  const links = await em.find(ProjectLinkRow, { where: { project_id: p.id } });
  return { p, tasks, links };
}

export const deleteProject: Impl<ToolArgs['vault_delete_project']> = {
  assess: assessWith((em, args) => findProject(em, args.project)),
  preview: async (args, ctx) => {
    const { p, tasks, links } = await deletePlan((await planningDb(ctx)).manager, args.project);
    const subtasks = tasks.filter((t) => t.parent_id !== null).length;
    const lines = [`Deletes the project ${p.name} (id ${p.id})${p.archived_at ? ', archived' : ''}.`];
    if (tasks.length) {
      lines.push(`Tasks lost: ${tasks.length}${subtasks ? ` (${subtasks} of them subtasks)` : ''}:`);
      lines.push(...listed(tasks.map((t) => `${t.parent_id ? 'subtask ' : ''}${t.title} (id ${t.id})${t.completed_at ? ', completed' : ''}`)));
    } else lines.push('It has no tasks.');
    if (links.length) lines.push(`Links removed: ${links.length} (the notes, files and events themselves stay).`);
    rememberFields(ctx, { tasks: tasks.map((t) => t.id).sort() });
    return { kind: 'delete', text: lines.join('\n') };
  },
  run: inPlanning(async (em, args, ctx) => {
    const { ProjectRow, TaskRow, ProjectLinkRow } = await schema();
    const { p, tasks, links } = await deletePlan(em, args.project);
    checkFields(ctx, `The project ${shown(p.name)}'s tasks`, { tasks: tasks.map((t) => t.id).sort() });
    // Explicit, not left to ON DELETE CASCADE: SQLite enforces it only with foreign_keys on.
    await em.delete(TaskRow, { project_id: p.id });
    await em.delete(ProjectLinkRow, { project_id: p.id });
    await em.delete(ProjectRow, { id: p.id });
    await renumber(em, ProjectRow, await allProjects(em));
    return { id: p.id, name: p.name, deleted: true, tasks_deleted: tasks.length, links_removed: links.length, summary: `deleted project ${p.name}` };
  }),
};

export const archiveProject: Impl<ToolArgs['vault_archive_project']> = {
  assess: assessWith((em, args) => findProject(em, args.project)),
  preview: async (args, ctx) => {
    const p = await findProject((await planningDb(ctx)).manager, args.project);
    const archived = args.archived ?? true;
    rememberFields(ctx, { archived: p.archived_at !== null });
    return fieldsPreview(`Project ${p.name} (id ${p.id})`, { archived: p.archived_at !== null }, { archived });
  },
  run: inPlanning(async (em, args, ctx) => {
    const { ProjectRow } = await schema();
    const p = await findProject(em, args.project);
    checkFields(ctx, `The project ${shown(p.name)}`, { archived: p.archived_at !== null });
    const archived = args.archived ?? true;
    if (archived !== (p.archived_at !== null)) {
      p.archived_at = archived ? now() : null;
      await em.update(ProjectRow, { id: p.id }, { archived_at: p.archived_at });
    }
    return { ...projectOut(p), summary: `${archived ? 'archived' : 'unarchived'} project ${p.name}` };
  }),
};

export const reorderProjects: Impl<ToolArgs['vault_reorder_projects']> = {
  assess: assessWith(async (em, args) => {
    const rows = await allProjects(em);
    reordered(rows, args.ids, (r) => pick(rows, r, 'project', 'name'));
  }),
  preview: async (args, ctx) => {
    const rows = await allProjects((await planningDb(ctx)).manager);
    const next = reordered(rows, args.ids, (r) => pick(rows, r, 'project', 'name'));
    return fieldsPreview('Project order', { order: rows.map((r) => r.name) }, { order: next.map((r) => r.name) });
  },
  run: inPlanning(async (em, args) => {
    const { ProjectRow } = await schema();
    const rows = await allProjects(em);
    const next = reordered(rows, args.ids, (r) => pick(rows, r, 'project', 'name'));
    if (next.length === 0) throw new MemoError('NOT_FOUND', 'There are no projects.');
    await renumber(em, ProjectRow, next);
    return { projects: next.map((p) => projectOut(p)), summary: 'reordered projects' };
  }),
};
