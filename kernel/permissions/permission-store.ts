import type { Logger } from '../logger.js';
import { JsonFileStore } from '../util/json-file-store.js';

export interface StoredDecision {
  tool: string;
  decision: 'allow' | 'deny';
  plugin: string | null;
  at: string;
}

interface FileShape {
  version: 1;
  decisions: Record<string, { decision: 'allow' | 'deny'; plugin: string | null; at: string }>;
}

/**
 * Forever decisions in `data/permissions.json`, a JsonFileStore: written atomically, re-read
 * whenever the file changes on disk (so `memo permissions revoke` in another process applies to a
 * running kernel at its next call). A corrupt or unreadable file is reported once and treated as
 * "no decisions" (never as allow); it is moved aside, not overwritten, when the next decision is saved.
 */
export class PermissionStore {
  private readonly store: JsonFileStore<FileShape>;

  constructor(
    readonly file: string,
    logger: Logger,
  ) {
    this.store = new JsonFileStore<FileShape>({
      file,
      logger,
      empty: () => ({ version: 1, decisions: table() }),
      parse: parseDecisions,
      whileUnusable: 'stored permissions are ignored (nothing is allowed by them)',
    });
  }

  /** Why the file could not be used, if it could not. */
  get problem(): string | null {
    return this.store.problem;
  }

  get(tool: string): StoredDecision | undefined {
    const d = this.store.read().decisions[tool];
    return d && { tool, ...d };
  }

  list(): StoredDecision[] {
    return Object.entries(this.store.read().decisions)
      .map(([tool, d]) => ({ tool, ...d }))
      .sort((a, b) => a.tool.localeCompare(b.tool));
  }

  set(tool: string, decision: 'allow' | 'deny', plugin: string | null, at: Date): void {
    this.store.update((shape) => sortedShape({ ...shape.decisions, [tool]: { decision, plugin, at: at.toISOString() } }));
  }

  /** Removes a tool's stored decision; false if there was none. */
  revoke(tool: string): boolean {
    if (!Object.hasOwn(this.store.read().decisions, tool)) return false;
    this.store.update((shape) => void delete shape.decisions[tool]);
    return true;
  }
}

/** The decisions of a parsed file, sorted by tool; throws saying what is wrong. One bad entry spoils the file: none of it is used. */
function parseDecisions(json: unknown): FileShape {
  const decisions = (json as Partial<FileShape> | null)?.decisions;
  if (!decisions || typeof decisions !== 'object' || Array.isArray(decisions)) throw new Error('does not have a "decisions" object');
  const out = table();
  for (const [tool, d] of Object.entries(decisions)) {
    if (!d || (d.decision !== 'allow' && d.decision !== 'deny')) throw new Error(`has an invalid entry for "${tool}"`);
    out[tool] = { decision: d.decision, plugin: d.plugin ?? null, at: String(d.at ?? '') };
  }
  return sortedShape(out);
}

/** A table without a prototype: a tool named "constructor" or "__proto__" is only a key. */
function table(): FileShape['decisions'] {
  return Object.create(null) as FileShape['decisions'];
}

/** The file's shape with its decisions in tool order, so the file reads (and diffs) the same way each time. */
function sortedShape(decisions: FileShape['decisions']): FileShape {
  const out = table();
  for (const tool of Object.keys(decisions).sort((a, b) => a.localeCompare(b))) out[tool] = decisions[tool]!; // a key of the object
  return { version: 1, decisions: out };
}
