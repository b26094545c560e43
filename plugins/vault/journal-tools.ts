/**
 * The journal: one markdown file per day, `<journal_folder>/YYYY-MM-DD.md` in the vault, so the journal
 * is readable (and editable) without the app and indexed like any note (search finds it, it has a stable
 * id). No table of its own: the file is the entry. Writes go through the same atomic, preview-checked
 * path as the note tools and update the index in the same step.
 */
import { unlink } from 'node:fs/promises';
import { MemoError, type Preview, type ToolContext } from 'memo-kernel/pack';
import { composeNote, isValidTag, normalizeTag, parseNote, splitFrontMatter } from './markdown.js';
import { checkSincePreview, diffOf, humanBytes, loadText, rememberPreview, reviewDocument, writeText, type LoadedFile } from './note-files.js';
import { ref } from './read-tools.js';
import { runtimeOf } from './runtime.js';
import type { ToolArgs } from './tool-args.js';
import { cleanRelative, ensureFolders, shown, type Vault } from './vault.js';
import type { NoteInfo } from './vault-index.js';

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A calendar day as YYYY-MM-DD; `2026-02-30` and `2026-13-01` are refused (they would name no day). */
function checkDay(d: string, what = 'date'): string {
  const m = DAY.exec(d);
  const date = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : null;
  if (!m || !date || date.getUTCFullYear() !== Number(m[1]) || date.getUTCMonth() !== Number(m[2]) - 1 || date.getUTCDate() !== Number(m[3]))
    throw new MemoError('VALIDATION', `The ${what} ${shown(d)} is not a day: write YYYY-MM-DD (2026-11-30).`, { details: { [what]: d } });
  return d;
}

function journalFolder(ctx: ToolContext): string {
  const f = ctx.config.journal_folder;
  return cleanRelative(typeof f === 'string' && f.trim() ? f : 'Journal', 'journal folder');
}

function entryPath(ctx: ToolContext, date: string): string {
  const folder = journalFolder(ctx);
  return folder ? `${folder}/${checkDay(date)}.md` : `${checkDay(date)}.md`;
}

const vaultOf = (ctx: ToolContext) => runtimeOf(ctx).vault(ctx);

/** Runs before anyone is asked: a date that names no day, or no vault set up, is refused outright. */
async function assessDay(args: { date: string }, ctx: ToolContext): Promise<null> {
  entryPath(ctx, args.date);
  await vaultOf(ctx);
  return null;
}

/**
 * The day's entry as it is on disk now, with its index row. A file the index has not seen yet (made
 * outside Memo with the watcher off) is indexed first, so the answer always carries a stable id.
 */
async function loadEntry(vault: Vault, ctx: ToolContext, date: string, intent: 'read' | 'write'): Promise<{ note: NoteInfo; file: LoadedFile }> {
  const rel = entryPath(ctx, date);
  const { resolved } = await vault.resolve(ctx, rel, intent);
  if (!resolved.exists || resolved.isDirectory)
    throw new MemoError('NOT_FOUND', `There is no journal entry for ${date} (${shown(rel)}); vault_create_journal_entry writes one.`, {
      details: { date, path: rel },
    });
  const file = await loadText(vault, ctx, rel, intent);
  let note = vault.index.note({ path: rel });
  if (!note) {
    await vault.exclusive(() => vault.refreshPaths([rel]));
    note = vault.index.note({ path: rel });
  }
  if (!note) throw new MemoError('TOOL_FAILED', `${shown(rel)} could not be indexed.`);
  return { note, file };
}

/** Same as loadEntry, for code already inside the vault's queue (a nested exclusive would wait on itself). */
async function loadEntryQueued(vault: Vault, ctx: ToolContext, date: string): Promise<{ note: NoteInfo; file: LoadedFile }> {
  const rel = entryPath(ctx, date);
  const { resolved } = await vault.resolve(ctx, rel, 'write');
  if (!resolved.exists || resolved.isDirectory)
    throw new MemoError('NOT_FOUND', `There is no journal entry for ${date} (${shown(rel)}); nothing was written.`, { details: { date, path: rel } });
  const file = await loadText(vault, ctx, rel, 'write');
  if (!vault.index.note({ path: rel })) await vault.refreshPaths([rel]);
  const note = vault.index.note({ path: rel });
  if (!note) throw new MemoError('TOOL_FAILED', `${shown(rel)} could not be indexed.`);
  return { note, file };
}

function entryRef(note: NoteInfo, date: string) {
  return { date, ...ref(note) };
}

// ---------------------------------------------------------------------------------------------
// Reads

export async function getJournalEntry(args: ToolArgs['vault_get_journal_entry'], ctx: ToolContext) {
  const vault = await vaultOf(ctx);
  const { note, file } = await loadEntry(vault, ctx, args.date, 'read');
  const parsed = parseNote(file.text);
  return {
    ...entryRef(note, args.date),
    content: parsed.body,
    front_matter: parsed.frontMatter ?? {},
    tags: vault.index.tagsOf(note.seq),
    modified: new Date(note.mtime).toISOString(),
    summary: `journal entry for ${args.date}`,
  };
}

export async function listJournalEntries(args: ToolArgs['vault_list_journal_entries'], ctx: ToolContext) {
  const from = args.from === undefined ? null : checkDay(args.from, 'from');
  const to = args.to === undefined ? null : checkDay(args.to, 'to');
  const vault = await vaultOf(ctx);
  const folder = journalFolder(ctx);
  const prefix = folder ? `${folder}/` : '';
  const entries = vault.index
    .notesUnder(folder)
    .flatMap((n) => {
      const rest = n.path.slice(prefix.length);
      const date = rest.endsWith('.md') ? rest.slice(0, -3) : '';
      // Only files directly in the folder named after a real day are entries; notes beside them are not.
      if (n.file_type !== 'markdown' || !DAY.test(date)) return [];
      try {
        checkDay(date);
      } catch {
        return [];
      }
      if ((from !== null && date < from) || (to !== null && date > to)) return [];
      return [{ ...entryRef(n, date), size: n.size, modified: new Date(n.mtime).toISOString() }];
    })
    .sort((a, b) => (a.date < b.date ? 1 : a.date > b.date ? -1 : 0));
  const limit = args.limit ?? 100;
  const shownEntries = entries.slice(0, limit);
  return {
    entries: shownEntries,
    count: shownEntries.length,
    ...(entries.length > limit ? { truncated: true, total: entries.length } : {}),
    summary: `${shownEntries.length} journal entr${shownEntries.length === 1 ? 'y' : 'ies'}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Writes

type Impl<A> = {
  run: (args: A, ctx: ToolContext) => Promise<unknown>;
  preview: (args: A, ctx: ToolContext) => Promise<Preview>;
  assess: (args: A, ctx: ToolContext) => Promise<null>;
};

function newEntryText(args: ToolArgs['vault_create_journal_entry']): string {
  const tags = (args.tags ?? []).map((t) => {
    const n = normalizeTag(t);
    if (!isValidTag(n)) throw new MemoError('VALIDATION', `${shown(t)} is not a tag: letters, digits, _ - and / (for nesting), not only digits, no spaces.`);
    return n;
  });
  return composeNote(tags.length ? { tags: [...new Set(tags)] } : {}, args.content ?? '');
}

async function absentEntry(vault: Vault, ctx: ToolContext, date: string) {
  const rel = entryPath(ctx, date);
  const { resolved } = await vault.resolve(ctx, rel, 'write');
  if (resolved.exists)
    throw new MemoError('CONFLICT', `${date} already has a journal entry (${shown(rel)}); nothing was written. Use vault_update_journal_entry to change it.`, {
      details: { date, path: rel },
    });
  return { rel, resolved };
}

export const createJournalEntry: Impl<ToolArgs['vault_create_journal_entry']> = {
  assess: async (args, ctx) => {
    await assessDay(args, ctx);
    newEntryText(args);
    await absentEntry(await vaultOf(ctx), ctx, args.date);
    return null;
  },
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const { rel } = await absentEntry(vault, ctx, args.date);
    rememberPreview(ctx, [{ rel, fingerprint: 'absent' }]);
    return { kind: 'diff', text: diffOf(rel, null, newEntryText(args)) };
  },
  run: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    return vault.exclusive(async () => {
      const { rel, resolved } = await absentEntry(vault, ctx, args.date);
      const text = newEntryText(args);
      checkSincePreview(ctx, [{ rel, fingerprint: 'absent' }]);
      const made = await ensureFolders(vault, ctx, journalFolder(ctx));
      const target = made.length ? (await vault.resolve(ctx, rel, 'write')).resolved : resolved;
      await writeText({ rel, resolved: target, mode: null }, text, 'absent');
      await vault.refreshPaths([rel]);
      const note = vault.index.note({ path: rel })!;
      return { ...entryRef(note, args.date), created: true, summary: `wrote the journal entry for ${args.date}` };
    });
  },
};

function updatedText(current: string, args: ToolArgs['vault_update_journal_entry']): string {
  if (args.content === undefined && args.append === undefined)
    throw new MemoError('VALIDATION', 'Say what to change: content (the whole body) or append (text to add at the end).');
  if (args.content !== undefined && args.append !== undefined)
    throw new MemoError('VALIDATION', 'Give content (replaces the body) or append (adds to it), not both.');
  const { body } = splitFrontMatter(current);
  const head = current.slice(0, current.length - body.length);
  if (args.content !== undefined) return head + args.content;
  const append = args.append ?? '';
  return head + (body === '' || body.endsWith('\n') ? `${body}${append}` : `${body}\n${append}`);
}

export const updateJournalEntry: Impl<ToolArgs['vault_update_journal_entry']> = {
  assess: async (args, ctx) => {
    if (args.content === undefined && args.append === undefined)
      throw new MemoError('VALIDATION', 'Say what to change: content (the whole body) or append (text to add at the end).');
    await assessDay(args, ctx);
    await loadEntry(await vaultOf(ctx), ctx, args.date, 'write');
    return null;
  },
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const { note, file } = await loadEntry(vault, ctx, args.date, 'write');
    rememberPreview(ctx, [file]);
    const next = updatedText(file.text, args);
    const document = reviewDocument('journal', args.date, note, file.text, next);
    return { kind: 'diff', text: diffOf(note.path, file.text, next), ...(document ? { document } : {}) };
  },
  run: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    return vault.exclusive(async () => {
      const { note, file } = await loadEntryQueued(vault, ctx, args.date);
      checkSincePreview(ctx, [file]);
      const text = updatedText(file.text, args);
      await writeText(file, text, file.fingerprint);
      await vault.refreshPaths([note.path]);
      return {
        ...entryRef(vault.index.note({ path: note.path }) ?? note, args.date),
        bytes: Buffer.byteLength(text),
        summary: `updated the journal entry for ${args.date}`,
      };
    });
  },
};

/** Links in other notes to this entry: they break when it goes. */
function brokenLinks(vault: Vault, note: NoteInfo): string[] {
  return vault.index
    .linksTo(note.seq)
    .filter((l) => l.source_seq !== note.seq)
    .flatMap((l) => {
      const s = vault.index.note({ seq: l.source_seq });
      return s ? [`${s.path}:${l.line}  ${l.embed ? '!' : ''}[[${l.raw}]]`] : [];
    })
    .sort();
}

function lossText(note: NoteInfo, file: LoadedFile, broken: string[]): string {
  const { body } = splitFrontMatter(file.text);
  const lines = body === '' ? 0 : body.replace(/\n$/, '').split('\n').length;
  const words = body.split(/\s+/).filter(Boolean).length;
  const first = body.split('\n').find((l) => l.trim() !== '');
  const links =
    broken.length === 0
      ? 'No other note links to it; no links break.'
      : `Links that will break: ${broken.length}:\n${broken
          .slice(0, 50)
          .map((b) => `  ${b}`)
          .join('\n')}${broken.length > 50 ? `\n  … and ${broken.length - 50} more` : ''}`;
  return [
    `Deletes the journal entry ${shown(note.path)} (id ${note.id}, ${humanBytes(Buffer.byteLength(file.text))}).`,
    `Text lost: ${lines} line${lines === 1 ? '' : 's'}, ${words} word${words === 1 ? '' : 's'}${first === undefined ? ' (the entry is empty)' : `, starting ${shown(first.trim().slice(0, 120))}`}.`,
    links,
  ].join('\n');
}

export const deleteJournalEntry: Impl<ToolArgs['vault_delete_journal_entry']> = {
  assess: async (args, ctx) => {
    await assessDay(args, ctx);
    await loadEntry(await vaultOf(ctx), ctx, args.date, 'write');
    return null;
  },
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const { note, file } = await loadEntry(vault, ctx, args.date, 'write');
    rememberPreview(ctx, [file]);
    return { kind: 'delete', text: lossText(note, file, brokenLinks(vault, note)) };
  },
  run: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    return vault.exclusive(async () => {
      const { note, file } = await loadEntryQueued(vault, ctx, args.date);
      checkSincePreview(ctx, [file]);
      const broken = brokenLinks(vault, note);
      const { resolved } = await vault.resolve(ctx, note.path, 'delete');
      await unlink(resolved.real);
      await vault.refreshPaths([note.path]);
      return {
        ...entryRef(note, args.date),
        deleted: true,
        size: Buffer.byteLength(file.text),
        broken_links: broken.length,
        summary: `deleted the journal entry for ${args.date}`,
      };
    });
  },
};
