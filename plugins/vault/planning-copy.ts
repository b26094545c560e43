/**
 * The one-time copy of the planning data from vault.sqlite (where it lived before it got a database
 * of its own, vault-planning) into the planning database. It runs when the planning database is first
 * opened: if vault.sqlite holds planning rows and the planning database is empty, every row is copied
 * in one transaction, the counts are checked inside it, and only then is it committed and marked done
 * (in both databases), so it never runs twice and a failure leaves nothing half copied.
 *
 * The old tables in vault.sqlite are kept as they are, not dropped: vault.sqlite is a per-instance
 * file that nothing writes planning rows to any more, so keeping them costs little, and it leaves the
 * person's data in place if the shared database is lost or the copy turns out wrong (a later release
 * may drop them). The copy reads them with the better-sqlite3 handle the index already uses.
 */
import { randomBytes } from 'node:crypto';
import type { Database } from 'better-sqlite3';
import type { DataSource, EntityManager } from 'typeorm';
import { MemoError, type PackApi } from 'memo-kernel/pack';

/** The planning tables, parents before children (foreign keys hold at each insert on PostgreSQL). */
const TABLES = [
  'planning_statuses',
  'planning_projects',
  'planning_tasks',
  'planning_project_links',
  'planning_task_notes',
  'inbox_items',
  'vault_settings',
] as const;
type Table = (typeof TABLES)[number];

/** SQLite keeps booleans as 0/1. */
const BOOLEANS: Partial<Record<Table, string[]>> = { planning_statuses: ['is_done'], planning_project_links: ['pinned'] };

/** Rows per INSERT: under PostgreSQL's 65,535 parameters for the widest table (17 columns). */
const CHUNK = 500;

/** vault_meta keys in vault.sqlite: this file's random id (named in the planning database's marker), and the outcome. */
const SOURCE_KEY = 'planning_source';
const DONE_KEY = 'planning_copy';

type Row = Record<string, unknown>;

function metaOf(index: Database, key: string): string | undefined {
  return (index.prepare(`SELECT value FROM vault_meta WHERE key = ?`).get(key) as { value: string } | undefined)?.value;
}

function setMeta(index: Database, key: string, value: string): void {
  index.prepare(`INSERT INTO vault_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`).run(key, value);
}

function hasTable(index: Database, table: string): boolean {
  return index.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(table) !== undefined;
}

/** The old rows, table by table (tables vault.sqlite never had count as empty). */
function oldRows(index: Database): Map<Table, Row[]> {
  const out = new Map<Table, Row[]>();
  for (const t of TABLES) {
    const rows = hasTable(index, t) ? (index.prepare(`SELECT * FROM "${t}"`).all() as Row[]) : [];
    for (const r of rows) for (const c of BOOLEANS[t] ?? []) r[c] = r[c] === 1 || r[c] === true;
    out.set(t, rows);
  }
  return out;
}

/** Tasks with their parent first (a subtask's parent_id references a task). */
function parentsFirst(rows: Row[]): Row[] {
  const ids = new Set(rows.map((r) => r.id));
  const top = rows.filter((r) => r.parent_id === null || !ids.has(r.parent_id));
  const rest = rows.filter((r) => !top.includes(r));
  const out = [...top];
  const placed = new Set(top.map((r) => r.id));
  while (rest.length) {
    const ready = rest.filter((r) => placed.has(r.parent_id));
    // A cycle cannot be inserted in any order: left for the insert to refuse (and the copy to roll back).
    const next = ready.length ? ready : rest.slice();
    for (const r of next) {
      out.push(r);
      placed.add(r.id);
      rest.splice(rest.indexOf(r), 1);
    }
  }
  return out;
}

const summary = (counts: Map<Table, number>) =>
  [...counts]
    .filter(([, n]) => n > 0)
    .map(([t, n]) => `${n} ${t}`)
    .join(', ');

async function planningRowCount(em: EntityManager): Promise<number> {
  let n = 0;
  for (const t of [...TABLES, 'planning_meta']) {
    const [r] = await em.query<Array<{ n: number | string }>>(`SELECT COUNT(*) AS n FROM "${t}"`);
    n += Number(r?.n ?? 0);
  }
  return n;
}

/** The planning database's record of a copy: which vault.sqlite it came from. */
async function copiedFrom(ds: DataSource): Promise<string | null> {
  const { PlanningMetaRow } = await import('./schema.js');
  const row = await ds.manager.findOneBy(PlanningMetaRow, { key: 'copied_from' });
  return row ? ((JSON.parse(row.value) as { source?: string }).source ?? '') : null;
}

/**
 * Copies vault.sqlite's planning rows into `planning` once (see the file comment). Throws TOOL_FAILED
 * when the copy fails: rolled back, the rows still in vault.sqlite, tried again on the next open.
 */
export async function copyOldPlanning(index: Database, planning: DataSource, logger: PackApi['logger']): Promise<void> {
  if (metaOf(index, DONE_KEY) !== undefined) return;
  const rows = oldRows(index);
  const counts = new Map(TABLES.map((t) => [t, rows.get(t)!.length]));
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const at = new Date().toISOString();
  if (total === 0) {
    setMeta(index, DONE_KEY, JSON.stringify({ outcome: 'nothing to copy', at }));
    return;
  }
  let source = metaOf(index, SOURCE_KEY);
  if (!source) {
    source = randomBytes(8).toString('hex');
    setMeta(index, SOURCE_KEY, source);
  }

  const settle = (from: string) => {
    if (from === source) {
      setMeta(index, DONE_KEY, JSON.stringify({ outcome: 'copied', at, rows: Object.fromEntries(counts) }));
      return;
    }
    setMeta(index, DONE_KEY, JSON.stringify({ outcome: 'not copied: the planning database already held planning data', at }));
    logger.warn(
      `vault: vault.sqlite holds planning data (${summary(counts)}) that was not copied into the planning database, because that database already holds planning data (from another instance, or an earlier copy). The rows stay in vault.sqlite, untouched.`,
    );
  };

  const before = await copiedFrom(planning);
  if (before !== null) return settle(before);

  const schema = await import('./schema.js');
  const { PlanningMetaRow } = schema;
  const entityOf: Record<Table, new () => object> = {
    planning_statuses: schema.StatusRow,
    planning_projects: schema.ProjectRow,
    planning_tasks: schema.TaskRow,
    planning_project_links: schema.ProjectLinkRow,
    planning_task_notes: schema.TaskNoteRow,
    inbox_items: schema.InboxItemRow,
    vault_settings: schema.VaultSettingRow,
  };
  let outcome: 'copied' | 'not empty';
  try {
    outcome = await planning.transaction(async (em) => {
      // The marker goes in first: a second instance copying at the same moment waits on its key, then fails and rolls back.
      await em.insert(PlanningMetaRow, { key: 'copied_from', value: JSON.stringify({ source, at, rows: Object.fromEntries(counts) }) });
      if ((await planningRowCount(em)) !== 1) return Promise.reject(new NotEmpty());
      for (const t of TABLES) {
        const list = t === 'planning_tasks' ? parentsFirst(rows.get(t)!) : rows.get(t)!;
        for (let i = 0; i < list.length; i += CHUNK) await em.insert(entityOf[t], list.slice(i, i + CHUNK));
      }
      for (const t of TABLES) {
        const [r] = await em.query<Array<{ n: number | string }>>(`SELECT COUNT(*) AS n FROM "${t}"`);
        if (Number(r?.n) !== counts.get(t)) throw new Error(`${t} holds ${String(r?.n)} rows after the copy, not ${counts.get(t)}`);
      }
      return 'copied' as const;
    });
  } catch (err) {
    if (err instanceof NotEmpty) outcome = 'not empty';
    else {
      // Another instance may have committed its own copy meanwhile (the marker's key refused ours).
      const other = await copiedFrom(planning).catch(() => null);
      if (other !== null) return settle(other);
      throw new MemoError(
        'TOOL_FAILED',
        `The vault's planning data (${summary(counts)}) could not be copied from vault.sqlite into the planning database, so the copy was rolled back: ` +
          `nothing was copied, the rows are still in vault.sqlite, untouched, and the copy is tried again the next time they are needed. Cause: ${String((err as Error)?.message ?? err).slice(0, 300)}`,
        { cause: err },
      );
    }
  }
  if (outcome === 'not empty') return settle('');
  settle(source);
  logger.info(`vault: copied the planning data (${summary(counts)}) from vault.sqlite into the planning database; the old tables are kept as they were.`);
}

class NotEmpty extends Error {}
