/**
 * A vault that heals itself (issue 42, items 1 and 2): the index (vault.sqlite) is a cache of the
 * files, damaged in each way the reliability run damaged it. The kernel starts, the damaged file is
 * set aside (vault.sqlite.broken-<time>, never deleted) with one line saying so, every vault tool
 * works, tasks included, and every note keeps its id (note-ids.jsonl beside the index). Real files,
 * a real kernel with the built-in vault pack.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { reopenVault, value, vaultKernel, type VaultFixture } from './helpers.js';

const FILES = {
  'Projects/Launch kickoff.md': '# Launch kickoff\nPress kit and pricing. See [[Weekly review]].\n#launch\n',
  'Weekly review.md': '# Weekly review\nWhat went well this week.\n',
  'Recipes/Soup.md': '# Soup\nLeeks, potatoes, stock.\n',
};

/** Every note's id, by path. */
async function ids(fx: { call: VaultFixture['call'] }): Promise<Record<string, string>> {
  const hits = value(await fx.call('vault_search_notes', { query: '', limit: 100 })).results as Array<{ path: string; id: string }>;
  return Object.fromEntries(hits.map((h) => [h.path, h.id]).sort());
}

const reopen = reopenVault;

/** Overwrites `bytes` bytes of a file at `offset` with a pattern that is no SQLite structure. */
function scribble(file: string, offset: number, bytes: number): void {
  const fd = fs.openSync(file, 'r+');
  try {
    fs.writeSync(fd, Buffer.alloc(bytes, 0xa5), 0, bytes, offset);
  } finally {
    fs.closeSync(fd);
  }
}

const damages: Array<[string, (db: string) => void, { setAside: boolean }]> = [
  ['truncated to half', (db) => fs.truncateSync(db, Math.floor(fs.statSync(db).size / 2)), { setAside: true }],
  ['its header overwritten', (db) => scribble(db, 0, 100), { setAside: true }],
  [
    'random pages overwritten',
    (db) => {
      const pages = fs.statSync(db).size / 4096;
      for (const p of [2, Math.floor(pages / 2), pages - 2]) scribble(db, p * 4096, 4096);
    },
    { setAside: true },
  ],
  ['zero bytes', (db) => fs.truncateSync(db, 0), { setAside: false }],
  [
    'a WAL without its database',
    (db) => {
      fs.writeFileSync(`${db}-wal`, Buffer.alloc(8192, 0x5a));
      fs.rmSync(db);
    },
    { setAside: false },
  ],
  [
    'deleted, as README once told people to do',
    (db) => {
      for (const s of ['', '-wal', '-shm']) fs.rmSync(db + s, { force: true });
    },
    { setAside: false },
  ],
];

describe('a damaged vault index', () => {
  it.each(damages)('%s: the kernel starts, every note keeps its id, tasks and searches work', async (_name, damage, expected) => {
    let fx = await vaultKernel({ files: FILES });
    // Enough notes for several pages, so a page in the middle is notes, links or text.
    for (let i = 0; i < 80; i++) fx.put(`Bulk/Note ${i}.md`, `# Note ${i}\n${'word '.repeat(40)}[[Soup]]\n`);
    const before = await ids(fx);
    const task = value(await fx.call('vault_create_task', { title: 'Print the press kit', notes: ['Projects/Launch kickoff.md'] }));
    await fx.close();

    damage(fx.dbFile);
    fx = await reopen(fx);
    try {
      expect(await ids(fx)).toEqual(before);
      // The task holds the note by id: it still resolves to the note, not to a missing one.
      const got = value(await fx.call('vault_get_task', { task: 'Print the press kit' }));
      expect(JSON.stringify(got)).toContain(before['Projects/Launch kickoff.md']!);
      expect(JSON.stringify(got)).toContain('Launch kickoff');
      expect(JSON.stringify(got)).not.toMatch(/"missing":true/);
      void task;
      const read = value(await fx.call('vault_read_note', { note: 'Projects/Launch kickoff.md' }));
      expect(read.id).toBe(before['Projects/Launch kickoff.md']);
      const aside = fs.readdirSync(path.dirname(fx.dbFile)).filter((n) => n.startsWith('vault.sqlite.broken-'));
      const lines = fx.logger.lines.filter((l) => l.message.includes('could not be used')).map((l) => l.message);
      if (expected.setAside) {
        expect(aside.length).toBeGreaterThanOrEqual(1);
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(
          /vault: the index .*vault\.sqlite could not be used \((file is not a database|database disk image is malformed|quick_check: .+)\); it was set aside as vault\.sqlite\.broken-/,
        );
      } else {
        expect(lines).toEqual([]);
      }
      // What memo vault status says: the healing of this run, the damaged file kept, the ids kept.
      const status = value(await fx.call('vault_index_health', {}));
      expect(status).toMatchObject({ notes: Object.keys(before).length, planning: { check: 'ok' } });
      expect(status.index.note_ids_kept).toBe(Object.keys(before).length);
      if (expected.setAside) {
        expect(status.index.healed).toMatchObject({ setAside: expect.stringContaining('vault.sqlite.broken-') });
        expect(status.index.damaged_files_kept).toHaveLength(1);
        expect(status.summary).toMatch(
          /the index was damaged \(.+\) and rebuilt; the damaged file is vault\.sqlite\.broken-.*; 1 damaged index file kept beside it/,
        );
      } else {
        expect(status.index.healed).toBeNull();
        expect(status.summary).toContain('the index is sound');
      }
      // The reindex a person runs works whatever happened before.
      expect(value(await fx.call('vault_reindex', {})).notes).toBe(Object.keys(before).length);
      expect(await ids(fx)).toEqual(before);
    } finally {
      await fx.close();
    }
  });

  it('a note renamed on disk while its index was gone takes its id back by its content', async () => {
    let fx = await vaultKernel({ files: FILES });
    const before = await ids(fx);
    await fx.close();
    for (const s of ['', '-wal', '-shm']) fs.rmSync(fx.dbFile + s, { force: true });
    fs.renameSync(path.join(fx.vault, 'Recipes/Soup.md'), path.join(fx.vault, 'Recipes/Leek soup.md'));
    fx = await reopen(fx);
    try {
      const after = await ids(fx);
      expect(after['Recipes/Leek soup.md']).toBe(before['Recipes/Soup.md']);
      expect(after['Weekly review.md']).toBe(before['Weekly review.md']);
    } finally {
      await fx.close();
    }
  });

  it('journals one line per id given or freed: 60 notes made and deleted leave 121 readable lines after the header', async () => {
    const fx = await vaultKernel({ files: { 'a.md': 'a\n' } });
    try {
      await fx.call('vault_search_notes', { query: 'a' });
      const journal = path.join(path.dirname(fx.dbFile), 'note-ids.jsonl');
      for (let i = 0; i < 60; i++) {
        value(await fx.call('vault_create_note', { title: `n${i}`, content: `note ${i}` }));
        value(await fx.call('vault_delete_note', { note: `n${i}.md` }));
      }
      const lines = fs.readFileSync(journal, 'utf8').trim().split('\n');
      expect(JSON.parse(lines[0]!)).toMatchObject({ v: 1 });
      // One line for a.md (written from the index at open), then one per note made and one per note deleted.
      expect(lines).toHaveLength(122);
      expect(lines.slice(1).every((l) => Array.isArray(JSON.parse(l)))).toBe(true);
      expect(lines.slice(1).filter((l) => JSON.parse(l)[1] !== null).length).toBe(61);
    } finally {
      await fx.close();
    }
  });
});

describe('a damaged planning database', () => {
  it('stops only the planning tools, naming the file and the newest daily backup; notes and search go on; nothing is set aside', async () => {
    let fx = await vaultKernel({ files: FILES });
    value(await fx.call('vault_create_task', { title: 'Print the press kit' }));
    const backups = () =>
      fs
        .readdirSync(path.dirname(fx.planningFile))
        .filter((n) => n.startsWith('vault-planning.sqlite.backup-'))
        .sort();
    // The first open of a sound planning database made the day's copy (before the task); a day later, the next open makes another, with it.
    expect(backups()).toHaveLength(1);
    await fx.close();
    fx.clock.advance(24 * 3600_000);
    fx = await reopen(fx);
    value(await fx.call('vault_list_tasks', {}));
    expect(backups()).toHaveLength(2);
    await fx.close();

    scribble(fx.planningFile, 0, 100);
    fx = await reopen(fx);
    try {
      const refused = await fx.call('vault_list_tasks', {});
      expect(refused.ok).toBe(false);
      const message = refused.ok ? '' : refused.error.message;
      expect(message).toContain(`The vault's planning database ${fx.planningFile} is damaged (file is not a database)`);
      expect(message).toContain(`copy the newest backup ${path.join(path.dirname(fx.planningFile), backups()[1]!)} (of 2)`);
      expect(message).toContain('Notes and search keep working.');
      expect((await fx.call('vault_list_statuses', {})).ok).toBe(false);
      expect(value(await fx.call('vault_search_notes', { query: 'press kit' })).results.map((r: { path: string }) => r.path)).toEqual([
        'Projects/Launch kickoff.md',
      ]);
      expect(fx.logger.lines.filter((l) => l.message.includes('planning database')).length).toBe(1);
      expect(fs.readdirSync(path.dirname(fx.planningFile)).filter((n) => n.includes('broken'))).toEqual([]);
      const status = value(await fx.call('vault_index_health', {}));
      expect(status.planning).toMatchObject({ check: 'damaged', where: fx.planningFile, backups: backups() });
      expect(status.summary).toContain('the planning database is DAMAGED');

      // Restored from the backup as the message says: the task is back.
      await fx.close();
      fs.copyFileSync(path.join(path.dirname(fx.planningFile), backups()[1]!), fx.planningFile);
      for (const s of ['-wal', '-shm']) fs.rmSync(fx.planningFile + s, { force: true });
      fx = await reopen(fx);
      expect(JSON.stringify(value(await fx.call('vault_list_tasks', {})))).toContain('Print the press kit');
    } finally {
      await fx.close();
    }
  });
});

describe('the vault index in the web console', () => {
  it('registers a Vault index panel whose actions are the check and the rebuild tools', async () => {
    const fx = await vaultKernel({ files: FILES });
    try {
      expect(fx.kernel.panels.get('vault', 'vault-index')).toMatchObject({
        pack: 'vault',
        title: 'Vault index',
        actions: [
          { id: 'health', tool: 'vault_index_health' },
          { id: 'reindex', tool: 'vault_reindex' },
        ],
      });
    } finally {
      await fx.close();
    }
  });
});

describe('memo vault status', () => {
  it('prints one line: the notes, whether the index was rebuilt after damage, the planning check', async () => {
    let fx = await vaultKernel({ files: FILES });
    value(await fx.call('vault_search_notes', { query: '' }));
    await fx.close();
    scribble(fx.dbFile, 0, 100);
    fx = await reopen(fx);
    const printed: unknown[] = [];
    const status = fx.kernel.commands.get('vault')!.command.subcommands.find((c) => c.name === 'status')!;
    const run = (json: boolean) =>
      status.run({
        args: {},
        options: { json },
        signal: new AbortController().signal,
        invoke: (tool, toolArgs) => fx.kernel.invoke({ tool, args: toolArgs, caller: { kind: 'cli' } }),
        print: (v) => printed.push(v),
        record: (change) => fx.kernel.admin.record({ ...change, by: 'cli' }),
      });
    try {
      expect(await run(false)).toBe(0);
      expect(printed.at(-1)).toMatch(
        /^3 notes indexed in vault; the index was damaged \(file is not a database\) and rebuilt; the damaged file is vault\.sqlite\.broken-[^;]+; 1 damaged index file kept beside it \(safe to delete\); the planning database is sound\.$/,
      );
      expect(await run(true)).toBe(0);
      expect(printed.at(-1)).toMatchObject({ ok: true, result: { notes: 3, index: { check: 'ok', healed: { problem: 'file is not a database' } } } });
    } finally {
      await fx.close();
    }
  });
});
