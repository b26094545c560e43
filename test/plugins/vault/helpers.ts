import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import type { ManualClock } from '../../../kernel/clock.js';

export const PLUGINS = path.resolve('plugins');

export interface VaultFixture extends Fixture {
  /** The vault folder (root/vault). */
  vault: string;
  call(tool: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** Writes a file into the vault, as a person's editor would. */
  put(rel: string, content: string | Buffer): string;
  read(rel: string): string;
  /** The index database file in the pack's data folder. */
  dbFile: string;
  /** The planning database file (statuses, projects, tasks, inbox, settings) when it is not in PostgreSQL. */
  planningFile: string;
  /** The PostgreSQL database the kernel keeps the planning data in (MEMO_DATABASE_URL when it was made), or null for the file. */
  planningUrl: string | null;
}

/**
 * A real kernel with the built-in packs loaded from `plugins/`, a vault folder `vault/` in a temp
 * root, and a prompter that allows once unless a test queues other answers. `watch: false` leaves the
 * watcher off (tests that do not edit files behind the tools' back).
 */
export async function vaultKernel(
  options: { watch?: boolean; files?: Record<string, string | Buffer>; config?: Record<string, unknown>; clock?: ManualClock } = {},
): Promise<VaultFixture> {
  const fx = makeKernel({ packs: [], ...(options.clock ? { clock: options.clock } : {}) });
  const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['vault'] }]);
  const mine = statuses.find((s) => s.id === 'vault');
  if (mine?.status !== 'loaded') throw new Error(`vault did not load: ${mine?.error ?? 'not found'}`);
  fx.kernel.packs.setConfig('vault', { watch: options.watch ?? false, ...options.config });
  fx.prompter.setFallback('allow-once');
  const vault = path.join(fx.root, 'vault');
  fs.mkdirSync(vault);
  const put = (rel: string, content: string | Buffer) => {
    const p = path.join(vault, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, content);
    return p;
  };
  for (const [rel, content] of Object.entries(options.files ?? {})) put(rel, content);
  return Object.assign(fx, {
    vault,
    put,
    read: (rel: string) => fs.readFileSync(path.join(vault, rel), 'utf8'),
    call: (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent' } }),
    dbFile: path.join(fx.dataDir, 'packs-data', 'vault', 'vault.sqlite'),
    planningFile: path.join(fx.dataDir, 'packs-data', 'vault', 'vault-planning.sqlite'),
    planningUrl: process.env.MEMO_DATABASE_URL?.trim() || null,
  });
}

/**
 * The vault kernel again on the same root, data folder and clock (a restart of memo serve, or a
 * one-shot CLI call after it): the old kernel is shut down first, if it was not already.
 */
export async function reopenVault(fx: VaultFixture): Promise<VaultFixture> {
  const again = await fx.restart();
  const [state] = await again.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['vault'] }]);
  if (state?.status !== 'loaded') throw new Error(`vault did not load: ${state?.error ?? 'not found'}`);
  again.kernel.packs.setConfig('vault', { watch: false });
  again.prompter.setFallback('allow-once');
  return Object.assign(again, {
    vault: fx.vault,
    put: (rel: string, content: string | Buffer) => fx.put(rel, content),
    read: (rel: string) => fx.read(rel),
    dbFile: fx.dbFile,
    planningFile: fx.planningFile,
    planningUrl: fx.planningUrl,
    call: (tool: string, args: Record<string, unknown>) => again.kernel.invoke({ tool, args, caller: { kind: 'agent' } }),
  });
}

/**
 * Runs SQL on the planning database from outside the kernel, as a person's tool or another instance
 * would: the SQLite file, or the pack's schema in PostgreSQL when the kernel has one. The SQL must
 * suit both (`?` placeholders, true/false for booleans, CAST(COUNT(*) AS integer)). The planning
 * database is made on first use: some planning call must have run before.
 */
export async function planningSql(fx: VaultFixture, sql: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  if (!fx.planningUrl) {
    const db = new Database(fx.planningFile);
    try {
      const stmt = db.prepare(sql);
      return stmt.reader ? (stmt.all(...params) as Array<Record<string, unknown>>) : (stmt.run(...params), []);
    } finally {
      db.close();
    }
  }
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: fx.planningUrl });
  await client.connect();
  try {
    await client.query(`SET search_path TO pack_vault__vault_planning`);
    let n = 0;
    return (
      await client.query(
        sql.replace(/\?/g, () => `$${++n}`),
        params,
      )
    ).rows as Array<Record<string, unknown>>;
  } finally {
    await client.end();
  }
}

export function value(r: ToolResult): any {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.value;
}

export function error(r: ToolResult): { code: string; message: string; details?: any } {
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r.value).slice(0, 300)}`);
  return r.error;
}

/** The codes of an operation's own failures, which a desktop-bridge write answers `{success: false}` (bridge.ts). */
const ANSWERED = ['VALIDATION', 'NOT_FOUND', 'CONFLICT'];

/**
 * A desktop-bridge write that could not run, as its caller got it, checked for its form: an
 * operation's own failure (its arguments, a lookup: VALIDATION, NOT_FOUND, CONFLICT) answered
 * `{success: false, error, code}` without anyone being asked; the rest (the sandbox's refusals, a
 * switched-off feature, a name that is not a write operation) an error.
 */
export function bridgeRefusal(r: ToolResult): { code: string; message: string; details?: any } {
  if (r.ok) {
    const v = r.value as { success?: unknown; code?: string; error?: string };
    if (v?.success !== false) throw new Error(`expected a refusal, got ${JSON.stringify(r.value).slice(0, 300)}`);
    if (!ANSWERED.includes(v.code ?? '')) throw new Error(`${v.code} was answered {success: false}; it should be an error`);
    return { code: v.code!, message: v.error! };
  }
  const bridgeLevel = r.error.details && ('rule' in r.error.details || 'effect' in r.error.details);
  if (ANSWERED.includes(r.error.code) && !bridgeLevel) throw new Error(`${r.error.code} (${r.error.message}) should be answered {success: false}`);
  return r.error;
}

/** Paths of the search hits for a query. */
export async function hits(fx: VaultFixture, query: string, extra: Record<string, unknown> = {}): Promise<string[]> {
  return (value(await fx.call('vault_search_notes', { query, ...extra })).results as Array<{ path: string }>).map((r) => r.path).sort();
}

/** Waits until the search for `query` returns exactly `expected` (the watcher has applied a change). */
export function waitForHits(fx: VaultFixture, query: string, expected: string[]): Promise<boolean> {
  let last: string[] = [];
  return waitFor(
    async () => {
      last = await hits(fx, query);
      return JSON.stringify(last) === JSON.stringify([...expected].sort());
    },
    { what: () => `search ${JSON.stringify(query)} to return ${JSON.stringify(expected)} (last: ${JSON.stringify(last)})` },
  );
}

/** Reads the index database directly (read-only), for comparing two indexes. */
export function snapshot(dbFile: string): unknown {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  try {
    const notes = db.prepare(`SELECT id, path, title, file_type, hash, front_matter, headings, aliases FROM notes ORDER BY path`).all();
    const tags = db.prepare(`SELECT n.path, t.tag FROM note_tags t JOIN notes n ON n.seq = t.note_seq ORDER BY n.path, t.tag`).all();
    const links = db
      .prepare(
        `SELECT s.path AS source, l.raw, l.line, l.status, l.heading, t.path AS target FROM links l JOIN notes s ON s.seq = l.source_seq
         LEFT JOIN notes t ON t.seq = l.target_seq ORDER BY s.path, l.line, l.raw`,
      )
      .all();
    // The FTS table keeps no text: its index is compared, term by term and position by position.
    db.exec(`CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, notes_fts, 'instance')`);
    const fts = db
      .prepare(`SELECT n.path, v.term, v.col, v.offset FROM temp.vocab v JOIN notes n ON n.seq = v.doc ORDER BY n.path, v.col, v.offset, v.term`)
      .all();
    return { notes, tags, links, fts };
  } finally {
    db.close();
  }
}
