/**
 * Desktop bridge operations: a project's hub link layer (see bridge.ts for the contract every
 * operation keeps). A project holds notes, filed files (the vault's non-markdown files) and calendar
 * events as link rows (planning_project_links), by the items' stable ids, so a rename or move keeps
 * them; the items themselves are never touched by a link or unlink. Reads report a link whose item is
 * gone as missing rather than dropping it; events are read through the calendar pack when it is
 * loaded. Every answer gives the items' references (id, path, title for notes and files).
 */
import type { EntityManager } from 'typeorm';
import { MemoError, type JsonValue, type ToolContext } from 'memo-kernel/pack';
import { booleanArg, oneObject, op, stringArg, type BridgeOp } from './bridge-op.js';
import { calendarService, requireCalendar } from './bridge-calendar.js';
import { checkHttpUrl, hostAndPath, newNoteArgs } from './bridge-inbox.js';
import { fetchPageTitle } from './page-title.js';
import { importIntoVault, planImport } from './import-files.js';
import { humanBytes } from './note-files.js';
import { checkFields, fieldRows, fieldsPreview, inPlanning, listed, now, planningDb, rememberFields, schema } from './planning-store.js';
import { findProject } from './project-tools.js';
import { ref } from './read-tools.js';
import { runtimeOf } from './runtime.js';
import type { ProjectLinkRow, ProjectRow } from './schema.js';
import { shown } from './vault.js';
import type { NoteInfo } from './vault-index.js';
import { createNote } from './write-tools.js';

const ITEM_TYPES = ['note', 'file', 'calendar_event'] as const;
type ItemType = (typeof ITEM_TYPES)[number];

const em = async (ctx: ToolContext): Promise<EntityManager> => (await planningDb(ctx)).manager;
const vaultOf = (ctx: ToolContext) => runtimeOf(ctx).vault(ctx);

function itemTypeArg(v: JsonValue | undefined): ItemType {
  if (typeof v !== 'string' || !(ITEM_TYPES as readonly string[]).includes(v))
    throw new MemoError('VALIDATION', `itemType must be one of ${ITEM_TYPES.join(', ')}.`);
  return v as ItemType;
}

function projectIdArg(args: JsonValue[]): string {
  if (args.length !== 1) throw new MemoError('VALIDATION', 'it takes the project id (or name).');
  return stringArg(args[0], 'projectId', { max: 200 });
}

async function linksOf(m: EntityManager, projectId: string): Promise<ProjectLinkRow[]> {
  const { ProjectLinkRow } = await schema();
  const rows = await m.find(ProjectLinkRow, { where: { project_id: projectId }, order: { created_at: 'ASC', item_id: 'ASC' } });
  // Pinned first, each group in the order linked.
  return [...rows.filter((r) => r.pinned), ...rows.filter((r) => !r.pinned)];
}

const rowOut = (r: ProjectLinkRow) => ({
  project_id: r.project_id,
  item_type: r.item_type,
  item_id: r.item_id,
  pinned: Boolean(r.pinned),
  created_at: r.created_at,
});

// ---------------------------------------------------------------------------------------------
// Items: a note is a markdown file of the vault, a file any other file it indexes, an event the calendar pack's

interface ItemRef {
  item_type: ItemType;
  id: string;
  title: string | null;
  path?: string | null;
  file_type?: string;
  start?: string;
  end?: string;
  missing?: true;
  unavailable?: string;
}

/** The note or file a call names (id, path or title), of the type asked for. */
async function vaultItem(ctx: ToolContext, type: 'note' | 'file', refText: string): Promise<NoteInfo> {
  const { note } = (await vaultOf(ctx)).find(refText);
  if (type === 'note' && note.file_type !== 'markdown')
    throw new MemoError('VALIDATION', `${shown(note.path)} is a ${note.file_type} file, not a note: link it with itemType file.`);
  if (type === 'file' && note.file_type === 'markdown') throw new MemoError('VALIDATION', `${shown(note.path)} is a note: link it with itemType note.`);
  return note;
}

/** The item a write names, as it exists now (NOT_FOUND otherwise). */
async function existingItem(ctx: ToolContext, type: ItemType, itemId: string): Promise<ItemRef> {
  if (type !== 'calendar_event') {
    const n = await vaultItem(ctx, type, itemId);
    return { item_type: type, ...ref(n) };
  }
  const e = await requireCalendar(ctx).getEvent(ctx, itemId);
  if (!e) throw new MemoError('NOT_FOUND', `No calendar event ${shown(itemId)} (give its id as calendar.listEvents gives it, calendar:uid).`);
  return { item_type: type, id: e.id, title: e.title, start: e.start, end: e.end };
}

/** A linked item as it stands: its reference, or missing / unavailable, never dropped. */
async function linkedItem(ctx: ToolContext, r: ProjectLinkRow): Promise<ItemRef & { pinned: boolean }> {
  const pinned = Boolean(r.pinned);
  const type = r.item_type as ItemType;
  if (type === 'calendar_event') {
    const cal = calendarService(ctx);
    if (!cal) return { item_type: type, id: r.item_id, title: null, unavailable: 'calendar pack not loaded', pinned };
    const e = await cal.getEvent(ctx, r.item_id);
    return e
      ? { item_type: type, id: e.id, title: e.title, start: e.start, end: e.end, pinned }
      : { item_type: type, id: r.item_id, title: null, missing: true, pinned };
  }
  const n = (await vaultOf(ctx)).index.note({ id: r.item_id });
  return n ? { item_type: type, ...ref(n), pinned } : { item_type: type, id: r.item_id, path: null, title: null, missing: true, pinned };
}

const label = (i: ItemRef) => (i.missing ? `(missing ${i.item_type} ${i.id})` : `${i.title ?? i.id}${i.path ? ` (${i.path}, id ${i.id})` : ` (id ${i.id})`}`);

/** For a link that already exists: the stored id an item goes by (a note named by path or title reads as its id). */
async function storedItemId(ctx: ToolContext, type: ItemType, itemId: string): Promise<string> {
  if (type === 'calendar_event') return itemId;
  try {
    return (await vaultOf(ctx)).find(itemId).note.id;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'NOT_FOUND') return itemId; // a link to a note deleted since
    throw err;
  }
}

async function findLink(m: EntityManager, projectId: string, type: ItemType | null, itemId: string): Promise<ProjectLinkRow | null> {
  const { ProjectLinkRow } = await schema();
  const rows = await m.find(ProjectLinkRow, { where: { project_id: projectId, item_id: itemId, ...(type ? { item_type: type } : {}) } });
  if (rows.length > 1) throw new MemoError('VALIDATION', `${shown(itemId)} is linked as ${rows.map((r) => r.item_type).join(' and ')}; name the item's type.`);
  return rows[0] ?? null;
}

const projectHead = (p: ProjectRow) => `Project ${p.name} (id ${p.id})`;

// ---------------------------------------------------------------------------------------------
// Reads

const listProjectContents = op<string>({
  name: 'tasks.listProjectContents',
  effect: 'read',
  feature: 'tasks',
  usage: 'args [projectId] (id or name); answers {project, home_note, notes, files, events} (pinned first; missing items reported)',
  parse: projectIdArg,
  run: async (projectId, ctx) => {
    const m = await em(ctx);
    const p = await findProject(m, projectId);
    const items = await Promise.all((await linksOf(m, p.id)).map((r) => linkedItem(ctx, r)));
    const home = p.home_note_id ? (await vaultOf(ctx)).index.note({ id: p.home_note_id }) : undefined;
    const of = (t: ItemType) => items.filter((i) => i.item_type === t).map(({ item_type: _t, ...rest }) => rest);
    const notes = of('note');
    const files = of('file');
    const events = of('calendar_event');
    return {
      project: { id: p.id, name: p.name, home_note_id: p.home_note_id },
      home_note: p.home_note_id ? (home ? ref(home) : { id: p.home_note_id, path: null, title: null, missing: true }) : null,
      notes,
      files,
      events,
      count: items.length,
      summary: `${p.name} holds ${notes.length} note${notes.length === 1 ? '' : 's'}, ${files.length} file${files.length === 1 ? '' : 's'} and ${events.length} event${events.length === 1 ? '' : 's'}`,
    };
  },
});

const listProjectLinks = op<string>({
  name: 'tasks.listProjectLinks',
  effect: 'read',
  feature: 'tasks',
  usage: 'args [projectId] (id or name); answers {links: [{project_id, item_type, item_id, pinned, created_at}]}',
  parse: projectIdArg,
  run: async (projectId, ctx) => {
    const m = await em(ctx);
    const p = await findProject(m, projectId);
    const links = (await linksOf(m, p.id)).map(rowOut);
    return { links, count: links.length };
  },
});

const listForItem = op<{ itemType: ItemType; itemId: string }>({
  name: 'tasks.listForItem',
  effect: 'read',
  feature: 'tasks',
  usage: 'args [itemType, itemId] (itemType note, file or calendar_event); answers {projects: [{id, name, pinned}]}',
  parse: (args) => {
    if (args.length !== 2) throw new MemoError('VALIDATION', 'it takes the item type and the item id.');
    return { itemType: itemTypeArg(args[0]), itemId: stringArg(args[1], 'itemId', { max: 200 }) };
  },
  run: async (p, ctx) => {
    const { ProjectLinkRow, ProjectRow } = await schema();
    const m = await em(ctx);
    const itemId = await storedItemId(ctx, p.itemType, p.itemId);
    const rows = await m.find(ProjectLinkRow, { where: { item_type: p.itemType, item_id: itemId }, order: { created_at: 'ASC' } });
    const names = new Map((await m.find(ProjectRow)).map((x) => [x.id, x.name]));
    const projects = rows.map((r) => ({ id: r.project_id, name: names.get(r.project_id) ?? null, pinned: Boolean(r.pinned) }));
    return { item: { item_type: p.itemType, id: itemId }, projects, count: projects.length };
  },
});

// ---------------------------------------------------------------------------------------------
// Link, unlink, pin

interface LinkArgs {
  projectId: string;
  itemType: ItemType;
  itemId: string;
}

function parseLinkArgs(args: JsonValue[]): LinkArgs {
  const o = oneObject(args, ['projectId', 'itemType', 'itemId']);
  return {
    projectId: stringArg(o.projectId, 'projectId', { max: 200 }),
    itemType: itemTypeArg(o.itemType),
    itemId: stringArg(o.itemId, 'itemId', { max: 200 }),
  };
}

/** The project and the item a link call names, both existing, and whether they are linked already. */
async function linkPlan(ctx: ToolContext, a: LinkArgs) {
  const m = await em(ctx);
  const project = await findProject(m, a.projectId);
  const item = await existingItem(ctx, a.itemType, a.itemId);
  return { project, item, existing: await findLink(m, project.id, a.itemType, item.id) };
}

async function insertLink(m: EntityManager, projectId: string, type: ItemType, itemId: string): Promise<ProjectLinkRow> {
  const { ProjectLinkRow } = await schema();
  const row = m.create(ProjectLinkRow, { project_id: projectId, item_type: type, item_id: itemId, pinned: false, created_at: now() });
  await m.insert(ProjectLinkRow, row);
  return row;
}

const alreadyLinked = (project: ProjectRow, item: ItemRef) =>
  new MemoError('CONFLICT', `${label(item)} is already linked to the project ${shown(project.name)}.`, { details: { project: project.id, item: item.id } });

const linkProjectItem = op<LinkArgs>({
  name: 'tasks.linkProjectItem',
  effect: 'write',
  feature: 'tasks',
  usage: 'args [{projectId, itemType, itemId}] (itemType note, file or calendar_event; the item must exist); answers {link, item}',
  parse: parseLinkArgs,
  check: async (a, ctx) => {
    const { project, item, existing } = await linkPlan(ctx, a);
    if (existing) throw alreadyLinked(project, item);
  },
  preview: async (a, ctx) => {
    const { project, item } = await linkPlan(ctx, a);
    return fieldsPreview(`${projectHead(project)}: a new link`, {}, { item_type: a.itemType, item: label(item), pinned: false });
  },
  run: async (a, ctx) => {
    const { project, item } = await linkPlan(ctx, a);
    return inPlanning(async (m) => {
      if (await findLink(m, project.id, a.itemType, item.id)) throw alreadyLinked(project, item);
      const row = await insertLink(m, project.id, a.itemType, item.id);
      return { link: rowOut(row), item, summary: `linked ${label(item)} to the project ${project.name}` };
    })(null, ctx);
  },
});

const unlinkProjectItem = op<LinkArgs>({
  name: 'tasks.unlinkProjectItem',
  effect: 'delete',
  feature: 'tasks',
  usage: 'args [{projectId, itemType, itemId}]; removes the link only (the item stays); answers {unlinked, link}',
  parse: parseLinkArgs,
  check: async (a, ctx) => void (await unlinkPlan(ctx, a)),
  preview: async (a, ctx) => {
    const { project, row, item } = await unlinkPlan(ctx, a);
    rememberFields(ctx, { pinned: Boolean(row.pinned), created_at: row.created_at });
    const lines = [
      `Removes the link between the project ${project.name} (id ${project.id}) and the ${a.itemType.replace('_', ' ')} ${label(item)}${row.pinned ? ' (pinned)' : ''}.`,
      `Only the link is lost: the ${a.itemType === 'calendar_event' ? 'event' : a.itemType} itself stays.`,
    ];
    if (a.itemType === 'note' && project.home_note_id === row.item_id) lines.push('It stays the project home note.');
    return { kind: 'delete', text: lines.join('\n') };
  },
  run: async (a, ctx) => {
    const { project } = await unlinkPlan(ctx, a);
    const itemId = await storedItemId(ctx, a.itemType, a.itemId);
    return inPlanning(async (m) => {
      const { ProjectLinkRow } = await schema();
      const row = await findLink(m, project.id, a.itemType, itemId);
      if (!row) throw new MemoError('NOT_FOUND', `The link is gone already.`);
      checkFields(ctx, 'The link', { pinned: Boolean(row.pinned), created_at: row.created_at });
      await m.delete(ProjectLinkRow, { project_id: row.project_id, item_type: row.item_type, item_id: row.item_id });
      return { unlinked: true, link: rowOut(row), summary: `unlinked ${a.itemType} ${row.item_id} from the project ${project.name}` };
    })(null, ctx);
  },
});

async function unlinkPlan(ctx: ToolContext, a: LinkArgs) {
  const m = await em(ctx);
  const project = await findProject(m, a.projectId);
  const itemId = await storedItemId(ctx, a.itemType, a.itemId);
  const row = await findLink(m, project.id, a.itemType, itemId);
  if (!row) throw new MemoError('NOT_FOUND', `The project ${shown(project.name)} has no link to the ${a.itemType} ${shown(a.itemId)}.`);
  return { project, row, item: await linkedItem(ctx, row) };
}

interface PinArgs {
  projectId: string;
  itemId: string;
  pinned: boolean;
}

async function pinPlan(m: EntityManager, ctx: ToolContext, a: PinArgs) {
  const project = await findProject(m, a.projectId);
  let row = await findLink(m, project.id, null, a.itemId);
  if (!row) {
    // A note or file named by path or title: its id.
    const id = await storedItemId(ctx, 'note', a.itemId);
    row = id === a.itemId ? null : await findLink(m, project.id, null, id);
  }
  if (!row) throw new MemoError('NOT_FOUND', `The project ${shown(project.name)} has no link to ${shown(a.itemId)} (tasks.listProjectLinks lists them).`);
  return { project, row };
}

const setProjectLinkPinned = op<PinArgs>({
  name: 'tasks.setProjectLinkPinned',
  effect: 'write',
  feature: 'tasks',
  usage: 'args [{projectId, itemId, pinned}]; answers {link}',
  parse: (args) => {
    const o = oneObject(args, ['projectId', 'itemId', 'pinned']);
    return {
      projectId: stringArg(o.projectId, 'projectId', { max: 200 }),
      itemId: stringArg(o.itemId, 'itemId', { max: 200 }),
      pinned: booleanArg(o.pinned, 'pinned'),
    };
  },
  check: async (a, ctx) => void (await pinPlan(await em(ctx), ctx, a)),
  preview: async (a, ctx) => {
    const { project, row } = await pinPlan(await em(ctx), ctx, a);
    const item = await linkedItem(ctx, row);
    rememberFields(ctx, { pinned: Boolean(row.pinned) });
    return fieldsPreview(`${projectHead(project)}: the link to ${label(item)}`, { pinned: Boolean(row.pinned) }, { pinned: a.pinned });
  },
  run: inPlanning(async (m, a: PinArgs, ctx) => {
    const { ProjectLinkRow } = await schema();
    const { project, row } = await pinPlan(m, ctx, a);
    checkFields(ctx, 'The link', { pinned: Boolean(row.pinned) });
    if (Boolean(row.pinned) !== a.pinned)
      await m.update(ProjectLinkRow, { project_id: row.project_id, item_type: row.item_type, item_id: row.item_id }, { pinned: a.pinned });
    return { link: { ...rowOut(row), pinned: a.pinned }, summary: `${a.pinned ? 'pinned' : 'unpinned'} ${row.item_id} in the project ${project.name}` };
  }),
});

// ---------------------------------------------------------------------------------------------
// Home note

interface HomeArgs {
  projectId: string;
  noteId: string | null;
}

async function homePlan(ctx: ToolContext, a: HomeArgs) {
  const project = await findProject(await em(ctx), a.projectId);
  const note = a.noteId === null ? null : await vaultItem(ctx, 'note', a.noteId);
  return { project, note };
}

async function homeShown(ctx: ToolContext, id: string | null): Promise<string | null> {
  if (id === null) return null;
  const n = (await vaultOf(ctx)).index.note({ id });
  return n ? `${n.title} (${n.path}, id ${id})` : `(missing note ${id})`;
}

const setProjectHomeNote = op<HomeArgs>({
  name: 'tasks.setProjectHomeNote',
  effect: 'write',
  feature: 'tasks',
  usage: 'args [{projectId, noteId}] (noteId null clears it; a markdown note); answers {project, home_note}',
  parse: (args) => {
    const o = oneObject(args, ['projectId', 'noteId']);
    if (o.noteId === undefined) throw new MemoError('VALIDATION', 'noteId is required (null clears the home note).');
    return { projectId: stringArg(o.projectId, 'projectId', { max: 200 }), noteId: o.noteId === null ? null : stringArg(o.noteId, 'noteId', { max: 1000 }) };
  },
  check: async (a, ctx) => void (await homePlan(ctx, a)),
  preview: async (a, ctx) => {
    const { project, note } = await homePlan(ctx, a);
    rememberFields(ctx, { home_note_id: project.home_note_id });
    return fieldsPreview(
      projectHead(project),
      { home_note_id: await homeShown(ctx, project.home_note_id) },
      { home_note_id: await homeShown(ctx, note?.id ?? null) },
    );
  },
  run: async (a, ctx) => {
    const { note } = await homePlan(ctx, a);
    return inPlanning(async (m) => {
      const { ProjectRow } = await schema();
      const project = await findProject(m, a.projectId);
      checkFields(ctx, `The project ${shown(project.name)}`, { home_note_id: project.home_note_id });
      const id = note?.id ?? null;
      if (project.home_note_id !== id) await m.update(ProjectRow, { id: project.id }, { home_note_id: id });
      return {
        project: { id: project.id, name: project.name, home_note_id: id },
        home_note: note ? ref(note) : null,
        summary: note ? `set ${note.title} as the home note of ${project.name}` : `cleared the home note of ${project.name}`,
      };
    })(null, ctx);
  },
});

// ---------------------------------------------------------------------------------------------
// Capture a page, import files: into the project's folder, each linked

/** The vault folder a project's captured and imported items go to: Projects/<name>, the name made safe as one folder. */
function projectFolder(p: ProjectRow): string {
  const name =
    p.name
      .normalize('NFC')
      // eslint-disable-next-line no-control-regex -- control characters are exactly what is replaced
      .replace(/[/\\:*?"<>|[\]#^\u0000-\u001f]+/g, '-')
      .replace(/\s+/g, ' ')
      .replace(/^[.\s-]+|[.\s]+$/g, '')
      .slice(0, 100)
      .trim() || p.id;
  return `Projects/${name}`;
}

interface CaptureArgs {
  projectId: string;
  url: string;
}

const captureUrlToProject = op<CaptureArgs>({
  name: 'tasks.captureUrlToProject',
  effect: 'write',
  feature: 'tasks',
  network: true,
  usage: 'args [{projectId, url}] (http or https; fetches the page title); answers {note, link}',
  parse: (args) => {
    const o = oneObject(args, ['projectId', 'url']);
    return { projectId: stringArg(o.projectId, 'projectId', { max: 200 }), url: checkHttpUrl(o.url) };
  },
  check: async (a, ctx) => void (await findProject(await em(ctx), a.projectId)),
  preview: async (a, ctx) => {
    const project = await findProject(await em(ctx), a.projectId);
    const rows = fieldRows(
      {},
      {
        title: `the page's title (${hostAndPath(a.url)} if it cannot be fetched)`,
        folder: projectFolder(project),
        source: a.url,
        body: 'the address and the time it was fetched',
      },
    );
    return {
      kind: 'fields',
      text: [`Fetches ${a.url} (at most 5 s and 2 MiB) for its title, then creates a note and links it to the project ${project.name}:`, ...rows].join('\n'),
    };
  },
  run: async (a, ctx) => {
    const project = await findProject(await em(ctx), a.projectId);
    // Fetched before any write: the vault's queue never waits on the network.
    const page = await fetchPageTitle(a.url, ctx.signal, { allowPrivate: ctx.config.fetch_private_addresses === true });
    const title = page.title ?? hostAndPath(a.url);
    const content = `${a.url}\n\nFetched ${now()}.\n`;
    const made = (await createNote.run(await newNoteArgs(ctx, { title, folder: projectFolder(project), content, url: a.url }), ctx)) as {
      id: string;
      path: string;
      title: string;
    };
    const link = await inPlanning(async (m) => insertLink(m, (await findProject(m, project.id)).id, 'note', made.id))(null, ctx);
    return {
      note: { id: made.id, path: made.path, title: made.title },
      link: rowOut(link),
      title_fetched: page.title !== null,
      ...(page.title === null ? { warning: `The title could not be fetched (${page.problem}); the note is titled ${title}.` } : {}),
      summary: `captured ${a.url} as ${made.path} in the project ${project.name}`,
    };
  },
});

interface ImportArgs {
  projectId: string;
  sourcePaths: string[];
}

const importFilesToProject = op<ImportArgs>({
  name: 'tasks.importFilesToProject',
  effect: 'write',
  feature: 'tasks',
  usage: 'args [{projectId, sourcePaths}] (workspace paths, at most 20 files / 50 MiB; copied to Projects/<name>/, never overwriting); answers {files, links}',
  parse: (args) => {
    const o = oneObject(args, ['projectId', 'sourcePaths']);
    if (!Array.isArray(o.sourcePaths)) throw new MemoError('VALIDATION', 'sourcePaths must be a list of paths.');
    return {
      projectId: stringArg(o.projectId, 'projectId', { max: 200 }),
      sourcePaths: o.sourcePaths.map((s, i) => stringArg(s, `sourcePaths[${i}]`, { max: 1000 })),
    };
  },
  check: async (a, ctx) => {
    const project = await findProject(await em(ctx), a.projectId);
    await planImport(ctx, a.sourcePaths, projectFolder(project));
  },
  preview: async (a, ctx) => {
    const project = await findProject(await em(ctx), a.projectId);
    const plan = await planImport(ctx, a.sourcePaths, projectFolder(project));
    const total = plan.reduce((n, p) => n + p.bytes, 0);
    rememberFields(ctx, { copies: plan.map((p) => `${p.sourceReal}:${p.bytes} -> ${p.target}`) });
    return {
      kind: 'text',
      text: [
        `Copies ${plan.length} file${plan.length === 1 ? '' : 's'} (${humanBytes(total)}) into the vault and links each to the project ${project.name} (id ${project.id}):`,
        ...listed(plan.map((p) => `${p.source} -> ${p.target} (${p.fileType}, ${humanBytes(p.bytes)})`)),
        'The originals stay where they are; no file in the vault is replaced.',
      ].join('\n'),
    };
  },
  run: async (a, ctx) => {
    const project = await findProject(await em(ctx), a.projectId);
    // The copies the person saw: each source as measured, each to the name shown.
    const plan = await planImport(ctx, a.sourcePaths, projectFolder(project));
    checkFields(ctx, 'The import', { copies: plan.map((p) => `${p.sourceReal}:${p.bytes} -> ${p.target}`) });
    const { files, created_folders } = await importIntoVault(ctx, a.sourcePaths, projectFolder(project));
    const links = await inPlanning(async (m) => {
      const out: ProjectLinkRow[] = [];
      for (const f of files) out.push(await insertLink(m, project.id, f.file_type === 'markdown' ? 'note' : 'file', f.id));
      return out;
    })(null, ctx);
    return {
      files,
      links: links.map(rowOut),
      ...(created_folders.length ? { created_folders } : {}),
      summary: `imported ${files.length} file${files.length === 1 ? '' : 's'} into ${projectFolder(project)} and linked them to ${project.name}`,
    };
  },
});

export const BRIDGE_PROJECT_OPS: BridgeOp[] = [
  listProjectContents,
  listProjectLinks,
  listForItem,
  linkProjectItem,
  unlinkProjectItem,
  setProjectLinkPinned,
  setProjectHomeNote,
  captureUrlToProject,
  importFilesToProject,
];
