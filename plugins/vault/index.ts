/**
 * The built-in `vault` pack: notes in an Obsidian-style markdown vault (memrynote's vault tools), over
 * a rebuildable SQLite index. The files are the truth; the index (notes with stable ids, tags, links,
 * FTS5 text) lives in the pack's data folder and a watcher keeps it live. `activate` contributes the
 * `memo vault init|reindex` commands; the vault itself opens on the first call that needs it.
 */
import { defineTools, isSqliteDamage, lazyTool, MemoError, type Disposable, type PackApi, type ToolContext, type ToolImplementation } from 'memo-kernel/pack';
import type { Feature } from './features.js';
import { ReminderDelivery, vaultReminders } from './reminder-delivery.js';
import { register, runtimeOf, unregister } from './runtime.js';
import type { VaultEntities } from './services.js';
import type { ToolArgs } from './tool-args.js';
import { linked } from './item-refs.js';

// Each tool's code is imported on its first call, not when the pack loads (most of the pack's
// start-up time): the declarations in plugin.json are what the kernel lists, validates and gates.
const bridge = () => import('./bridge.js');
const inbox = () => import('./inbox-tools.js');
const journal = () => import('./journal-tools.js');
const projects = () => import('./project-tools.js');
const read = () => import('./read-tools.js');
const statuses = () => import('./status-tools.js');
const tasks = () => import('./task-tools.js');
const write = () => import('./write-tools.js');

/** The feature switch a tool belongs to (tasks, projects and statuses are the Tasks surface), if any. */
function featureOf(tool: string): Feature | null {
  if (/_(task|tasks|subtask|project|projects|status|statuses)(_|$)/.test(tool)) return 'tasks';
  if (tool.includes('_journal_')) return 'journal';
  if (/_inbox(_|$)/.test(tool)) return 'inbox';
  return null;
}

/** Every tool of a switched-off surface answers saying so, before anyone is asked and again when it runs. */
function gated(all: Record<string, ToolImplementation>): Record<string, ToolImplementation> {
  const out: Record<string, ToolImplementation> = {};
  for (const [name, impl] of Object.entries(all)) {
    const feature = featureOf(name);
    if (feature === null) {
      out[name] = impl;
      continue;
    }
    const check = async (ctx: ToolContext) => (await import('./features.js')).requireFeature(ctx, feature);
    out[name] =
      typeof impl === 'function'
        ? async (args, ctx) => (await check(ctx), impl(args, ctx))
        : {
            ...impl,
            assess: async (args, ctx) => (await check(ctx), impl.assess ? impl.assess(args, ctx) : null),
            run: async (args, ctx) => (await check(ctx), impl.run(args, ctx)),
          };
  }
  return out;
}

/**
 * A call that finds the index damaged (SQLite: not a database, malformed) sets it aside and has it
 * built again from the files, then fails saying so: the next call works on the new index, every note
 * with its id. Not retried here: a write may have reached its file before the index failed.
 */
function healing(all: Record<string, ToolImplementation>): Record<string, ToolImplementation> {
  const out: Record<string, ToolImplementation> = {};
  const heal = async (err: unknown, ctx: ToolContext): Promise<never> => {
    if (!isSqliteDamage(err)) throw err;
    const rt = runtimeOf(ctx);
    await rt.healIndex(err);
    throw new MemoError(
      'TOOL_FAILED',
      `The vault index was damaged (${rt.healed?.problem ?? 'malformed'}); it was set aside as ${rt.healed?.setAside ?? 'a .broken file'} and is being built again from the notes, each keeping its id. Run the call again.`,
    );
  };
  for (const [name, impl] of Object.entries(all))
    out[name] =
      typeof impl === 'function'
        ? async (args, ctx) => {
            try {
              return await impl(args, ctx);
            } catch (err) {
              return heal(err, ctx);
            }
          }
        : {
            ...impl,
            run: async (args, ctx) => {
              try {
                return await impl.run(args, ctx);
              } catch (err) {
                return heal(err, ctx);
              }
            },
          };
  return out;
}

export const tools = linked(
  healing(
    gated(
      defineTools<ToolArgs>({
        vault_search_notes: lazyTool(async () => (await read()).searchNotes),
        vault_read_note: lazyTool(async () => (await read()).readNote),
        vault_list_folder: lazyTool(async () => (await read()).listFolder),
        vault_get_tags: lazyTool(async () => (await read()).getTags),
        vault_get_current_note: lazyTool(async () => (await read()).getCurrentNote),
        vault_create_note: lazyTool(async () => (await write()).createNote),
        vault_update_note: lazyTool(async () => (await write()).updateNote),
        vault_rename_note: lazyTool(async () => (await write()).renameNote),
        vault_delete_note: lazyTool(async () => (await write()).deleteNote),
        vault_create_folder: lazyTool(async () => (await write()).createFolder),
        vault_rename_folder: lazyTool(async () => (await write()).renameFolder),
        vault_delete_folder: lazyTool(async () => (await write()).deleteFolder),
        vault_move_to_folder: lazyTool(async () => (await write()).moveToFolder),
        vault_add_tag: lazyTool(async () => (await write()).addTag),
        vault_remove_tag: lazyTool(async () => (await write()).removeTag),
        vault_add_html_artifact: lazyTool(async () => (await write()).addHtmlArtifact),
        vault_reindex: lazyTool(async () => (await write()).reindex),
        vault_index_health: lazyTool(async () => (await import('./index-health.js')).indexHealth),
        vault_list_statuses: lazyTool(async () => (await statuses()).listStatuses),
        vault_create_status: lazyTool(async () => (await statuses()).createStatus),
        vault_update_status: lazyTool(async () => (await statuses()).updateStatus),
        vault_delete_status: lazyTool(async () => (await statuses()).deleteStatus),
        vault_reorder_statuses: lazyTool(async () => (await statuses()).reorderStatuses),
        vault_list_projects: lazyTool(async () => (await projects()).listProjects),
        vault_get_project: lazyTool(async () => (await projects()).getProject),
        vault_create_project: lazyTool(async () => (await projects()).createProject),
        vault_update_project: lazyTool(async () => (await projects()).updateProject),
        vault_delete_project: lazyTool(async () => (await projects()).deleteProject),
        vault_archive_project: lazyTool(async () => (await projects()).archiveProject),
        vault_reorder_projects: lazyTool(async () => (await projects()).reorderProjects),
        vault_list_tasks: lazyTool(async () => (await tasks()).listTasks),
        vault_get_task: lazyTool(async () => (await tasks()).getTask),
        vault_create_task: lazyTool(async () => (await tasks()).createTask),
        vault_update_task: lazyTool(async () => (await tasks()).updateTask),
        vault_delete_task: lazyTool(async () => (await tasks()).deleteTask),
        vault_complete_task: lazyTool(async () => (await tasks()).completeTask),
        vault_uncomplete_task: lazyTool(async () => (await tasks()).uncompleteTask),
        vault_archive_task: lazyTool(async () => (await tasks()).archiveTask),
        vault_unarchive_task: lazyTool(async () => (await tasks()).unarchiveTask),
        vault_move_task: lazyTool(async () => (await tasks()).moveTask),
        vault_reorder_tasks: lazyTool(async () => (await tasks()).reorderTasks),
        vault_duplicate_task: lazyTool(async () => (await tasks()).duplicateTask),
        vault_convert_task_to_subtask: lazyTool(async () => (await tasks()).convertTaskToSubtask),
        vault_convert_subtask_to_task: lazyTool(async () => (await tasks()).convertSubtaskToTask),
        vault_get_journal_entry: lazyTool(async () => (await journal()).getJournalEntry),
        vault_list_journal_entries: lazyTool(async () => (await journal()).listJournalEntries),
        vault_create_journal_entry: lazyTool(async () => (await journal()).createJournalEntry),
        vault_update_journal_entry: lazyTool(async () => (await journal()).updateJournalEntry),
        vault_delete_journal_entry: lazyTool(async () => (await journal()).deleteJournalEntry),
        vault_list_inbox_items: lazyTool(async () => (await inbox()).listInboxItems),
        vault_get_inbox_item: lazyTool(async () => (await inbox()).getInboxItem),
        vault_add_to_inbox: lazyTool(async () => (await inbox()).addToInbox),
        vault_update_inbox_item: lazyTool(async () => (await inbox()).updateInboxItem),
        vault_snooze_inbox_item: lazyTool(async () => (await inbox()).snoozeInboxItem),
        vault_archive_inbox_item: lazyTool(async () => (await inbox()).archiveInboxItem),
        vault_unarchive_inbox_item: lazyTool(async () => (await inbox()).unarchiveInboxItem),
        vault_delete_inbox_item: lazyTool(async () => (await inbox()).deleteInboxItem),
        vault_add_inbox_tag: lazyTool(async () => (await inbox()).addInboxTag),
        vault_remove_inbox_tag: lazyTool(async () => (await inbox()).removeInboxTag),
        vault_desktop_read: lazyTool(async () => (await bridge()).desktopRead),
        vault_desktop_write: lazyTool(async () => (await bridge()).desktopWrite),
      }),
    ),
  ),
);

/** What a command run gets that `report` uses (the kernel's PackCommandContext). */
interface CommandOutput {
  options: Readonly<Record<string, unknown>>;
  print(value: unknown): void;
}

type CallResult = { ok: true; value: unknown } | { ok: false; error: { code: string; message: string } };

function report(ctx: CommandOutput, r: CallResult, done: (v: Record<string, unknown>) => string): number {
  if (!r.ok) {
    ctx.print(ctx.options.json ? { ok: false, error: { code: r.error.code, message: r.error.message } } : `${r.error.code}: ${r.error.message}`);
    return 1;
  }
  ctx.print(ctx.options.json ? { ok: true, result: r.value } : done(r.value as Record<string, unknown>));
  return 0;
}

/** `vault.entities` for other packs; its code (the planning store, tasks) is imported on the first use. */
function entities(api: PackApi): VaultEntities {
  let offered: Promise<VaultEntities> | undefined;
  const real = () =>
    (offered ??= import('./services.js').then(
      (m) => m.vaultEntities(api),
      (err: unknown) => {
        offered = undefined;
        throw err;
      },
    ));
  return {
    location: async (ctx) => (await real()).location(ctx),
    find: async (ctx, type, ref) => (await real()).find(ctx, type, ref),
    featureOn: async (ctx, feature: Feature) => (await real()).featureOn(ctx, feature),
  };
}

export function activate(api: PackApi): Disposable {
  const rt = register(api);
  api.provide('vault.entities', entities(api));
  api.commands.register({
    name: 'vault',
    description: 'the markdown vault: set it up and rebuild its index',
    subcommands: [
      {
        name: 'init',
        description: 'use DIR (inside the workspace root; default vault) as the vault: creates it if missing, saves it as the vault pack setting, indexes it',
        arguments: [{ name: 'dir', description: 'the vault folder, relative to the workspace root' }],
        options: [{ flags: '--json', description: 'print JSON' }],
        run: async (ctx) => {
          const dir = typeof ctx.args.dir === 'string' ? ctx.args.dir : undefined;
          const before = api.config().folder;
          if (dir !== undefined) api.configure({ folder: dir });
          const r = await ctx.invoke('vault_reindex', { create: true });
          if (!r.ok) {
            if (dir !== undefined && typeof before === 'string') api.configure({ folder: before });
          } else {
            // Saved as the sandbox resolved it (relative to the root), whatever spelling was given.
            const folder = (r.value as { folder?: unknown }).folder;
            if (typeof folder === 'string' && folder !== api.config().folder) api.configure({ folder });
          }
          return report(ctx, r, (v) => `Vault ready at ${String(v.folder)}: ${String(v.notes)} notes and files indexed.`);
        },
      },
      {
        name: 'status',
        description: "the vault index's and planning database's state: note count, a damaged index set aside and rebuilt, the planning check and its backups",
        options: [{ flags: '--json', description: 'print JSON' }],
        run: async (ctx) => report(ctx, await ctx.invoke('vault_index_health', {}), (v) => `${String(v.summary)}.`),
      },
      {
        name: 'reindex',
        description: 'rebuild the vault index from the files (notes keep their ids, tags their settings)',
        options: [{ flags: '--json', description: 'print JSON' }],
        run: async (ctx) =>
          report(ctx, await ctx.invoke('vault_reindex', {}), (v) => `Reindexed ${String(v.folder)}: ${String(v.notes)} notes and files in ${String(v.ms)} ms.`),
      },
    ],
  });
  // The web console's pages (data only): searching the notes and the latest changes, each a read through the pipeline.
  api.panels.register({
    id: 'notes',
    title: 'Notes',
    description: 'Search the vault as the agent does (words, tags, folders), or see what changed last. A note opens in the console.',
    lists: [
      {
        id: 'search',
        title: 'Search notes',
        tool: 'vault_search_notes',
        fields: ['query', 'folder'],
        args: { limit: 50 },
        rows: 'results',
        columns: [
          { key: 'title', label: 'Note', item: 'note', itemId: 'id' },
          { key: 'path', label: 'Path' },
          { key: 'snippet', label: 'Found' },
          { key: 'modified', label: 'Modified', time: true },
        ],
        empty: 'No note matches.',
      },
      {
        id: 'recent',
        title: 'Recent changes',
        tool: 'vault_search_notes',
        args: { query: '', file_types: ['markdown'], limit: 20 },
        rows: 'results',
        columns: [
          { key: 'title', label: 'Note', item: 'note', itemId: 'id' },
          { key: 'path', label: 'Path' },
          { key: 'modified', label: 'Modified', time: true },
        ],
        refreshSeconds: 60,
        empty: 'The vault has no notes yet.',
      },
    ],
  });
  // The web console's panel (data only): the index's state, and the rebuild, each one of the pack's tools through the pipeline.
  api.panels.register({
    id: 'vault-index',
    title: 'Vault index',
    description:
      'Is the index sound, or was it found damaged and rebuilt (the damaged file is kept beside it); the planning database’s check and its daily backups. Rebuild reads every note again; notes keep their ids.',
    actions: [
      { id: 'health', label: 'Check the index', tool: 'vault_index_health' },
      { id: 'reindex', label: 'Rebuild the index', tool: 'vault_reindex' },
    ],
  });
  // Reminders that remind (reminder-delivery.ts): the service memo serve runs, and what the console shows.
  const reminders = new ReminderDelivery(rt);
  rt.reminders = reminders;
  api.services.register({ name: 'reminders', start: () => reminders.start(), stop: () => reminders.stop() });
  api.provide('vault.reminders', vaultReminders(rt, reminders));
  return { dispose: () => void unregister(rt) };
}
