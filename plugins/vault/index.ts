/**
 * The built-in `vault` pack: notes in an Obsidian-style markdown vault (memrynote's vault tools), over
 * a rebuildable SQLite index. The files are the truth; the index (notes with stable ids, tags, links,
 * FTS5 text) lives in the pack's data folder and a watcher keeps it live. `activate` contributes the
 * `memo vault init|reindex` commands; the vault itself opens on the first call that needs it.
 */
import { defineTools, type Disposable, type PackApi, type ToolContext, type ToolImplementation } from 'memo-kernel/pack';
import { desktopRead, desktopWrite } from './bridge.js';
import { requireFeature, type Feature } from './features.js';
import { createJournalEntry, deleteJournalEntry, getJournalEntry, listJournalEntries, updateJournalEntry } from './journal-tools.js';
import {
  addInboxTag,
  addToInbox,
  archiveInboxItem,
  deleteInboxItem,
  getInboxItem,
  listInboxItems,
  removeInboxTag,
  snoozeInboxItem,
  unarchiveInboxItem,
  updateInboxItem,
} from './inbox-tools.js';
import { getCurrentNote, getTags, listFolder, readNote, searchNotes } from './read-tools.js';
import { archiveProject, createProject, deleteProject, getProject, listProjects, reorderProjects, updateProject } from './project-tools.js';
import { register, unregister } from './runtime.js';
import { vaultEntities } from './services.js';
import { createStatus, deleteStatus, listStatuses, reorderStatuses, updateStatus } from './status-tools.js';
import {
  archiveTask,
  completeTask,
  convertSubtaskToTask,
  convertTaskToSubtask,
  createTask,
  deleteTask,
  duplicateTask,
  getTask,
  listTasks,
  moveTask,
  reorderTasks,
  unarchiveTask,
  uncompleteTask,
  updateTask,
} from './task-tools.js';
import type { ToolArgs } from './tool-args.js';
import {
  addHtmlArtifact,
  addTag,
  createFolder,
  createNote,
  deleteFolder,
  deleteNote,
  moveToFolder,
  reindex,
  removeTag,
  renameFolder,
  renameNote,
  updateNote,
} from './write-tools.js';

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
    const check = (ctx: ToolContext) => requireFeature(ctx, feature);
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

export const tools = gated(
  defineTools<ToolArgs>({
    vault_search_notes: searchNotes,
    vault_read_note: readNote,
    vault_list_folder: listFolder,
    vault_get_tags: getTags,
    vault_get_current_note: getCurrentNote,
    vault_create_note: createNote,
    vault_update_note: updateNote,
    vault_rename_note: renameNote,
    vault_delete_note: deleteNote,
    vault_create_folder: createFolder,
    vault_rename_folder: renameFolder,
    vault_delete_folder: deleteFolder,
    vault_move_to_folder: moveToFolder,
    vault_add_tag: addTag,
    vault_remove_tag: removeTag,
    vault_add_html_artifact: addHtmlArtifact,
    vault_reindex: reindex,
    vault_list_statuses: listStatuses,
    vault_create_status: createStatus,
    vault_update_status: updateStatus,
    vault_delete_status: deleteStatus,
    vault_reorder_statuses: reorderStatuses,
    vault_list_projects: listProjects,
    vault_get_project: getProject,
    vault_create_project: createProject,
    vault_update_project: updateProject,
    vault_delete_project: deleteProject,
    vault_archive_project: archiveProject,
    vault_reorder_projects: reorderProjects,
    vault_list_tasks: listTasks,
    vault_get_task: getTask,
    vault_create_task: createTask,
    vault_update_task: updateTask,
    vault_delete_task: deleteTask,
    vault_complete_task: completeTask,
    vault_uncomplete_task: uncompleteTask,
    vault_archive_task: archiveTask,
    vault_unarchive_task: unarchiveTask,
    vault_move_task: moveTask,
    vault_reorder_tasks: reorderTasks,
    vault_duplicate_task: duplicateTask,
    vault_convert_task_to_subtask: convertTaskToSubtask,
    vault_convert_subtask_to_task: convertSubtaskToTask,
    vault_get_journal_entry: getJournalEntry,
    vault_list_journal_entries: listJournalEntries,
    vault_create_journal_entry: createJournalEntry,
    vault_update_journal_entry: updateJournalEntry,
    vault_delete_journal_entry: deleteJournalEntry,
    vault_list_inbox_items: listInboxItems,
    vault_get_inbox_item: getInboxItem,
    vault_add_to_inbox: addToInbox,
    vault_update_inbox_item: updateInboxItem,
    vault_snooze_inbox_item: snoozeInboxItem,
    vault_archive_inbox_item: archiveInboxItem,
    vault_unarchive_inbox_item: unarchiveInboxItem,
    vault_delete_inbox_item: deleteInboxItem,
    vault_add_inbox_tag: addInboxTag,
    vault_remove_inbox_tag: removeInboxTag,
    vault_desktop_read: desktopRead,
    vault_desktop_write: desktopWrite,
  }),
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

export function activate(api: PackApi): Disposable {
  const rt = register(api);
  api.provide('vault.entities', vaultEntities(api));
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
        name: 'reindex',
        description: 'rebuild the vault index from the files (notes keep their ids, tags their settings)',
        options: [{ flags: '--json', description: 'print JSON' }],
        run: async (ctx) =>
          report(ctx, await ctx.invoke('vault_reindex', {}), (v) => `Reindexed ${String(v.folder)}: ${String(v.notes)} notes and files in ${String(v.ms)} ms.`),
      },
    ],
  });
  return { dispose: () => void unregister(rt) };
}
