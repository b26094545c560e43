import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Logger } from '../logger.js';
import { fileStamp, writeFileAtomic } from '../util/atomic-file.js';

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
 * Forever decisions in `data/permissions.json`. Written atomically (temp file, fsync, rename).
 * Re-read whenever the file changes on disk, so `memo permissions revoke` in another process
 * applies to a running kernel at its next call. A corrupt or unreadable file is reported once and
 * treated as "no decisions" (never as allow); it is kept aside, not overwritten, when the next
 * decision is saved.
 */
export class PermissionStore {
  private decisions = new Map<string, StoredDecision>();
  private stamp = '';
  private reported = '';
  /** Why the file could not be used, if it could not. */
  problem: string | null = null;

  constructor(
    readonly file: string,
    private readonly logger: Logger,
  ) {}

  private refresh(): void {
    const stamp = fileStamp(this.file);
    if (stamp === this.stamp) return;
    this.stamp = stamp;
    this.decisions = new Map();
    this.problem = null;
    if (stamp === 'absent') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(fs.readFileSync(this.file, 'utf8'));
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      this.fail(e.code ? `cannot be read (${e.code})` : 'is not valid JSON');
      return;
    }
    const decisions = (parsed as Partial<FileShape> | null)?.decisions;
    if (!decisions || typeof decisions !== 'object' || Array.isArray(decisions)) {
      this.fail('does not have a "decisions" object');
      return;
    }
    for (const [tool, d] of Object.entries(decisions)) {
      if (!d || (d.decision !== 'allow' && d.decision !== 'deny')) {
        this.fail(`has an invalid entry for "${tool}"`);
        this.decisions = new Map();
        return;
      }
      this.decisions.set(tool, { tool, decision: d.decision, plugin: d.plugin ?? null, at: String(d.at ?? '') });
    }
  }

  private fail(why: string): void {
    this.problem = `${this.file} ${why}; stored permissions are ignored (nothing is allowed by them) until it is fixed or a new decision replaces it`;
    if (this.reported !== this.stamp) {
      this.reported = this.stamp;
      this.logger.warn(this.problem);
    }
  }

  get(tool: string): StoredDecision | undefined {
    this.refresh();
    return this.decisions.get(tool);
  }

  list(): StoredDecision[] {
    this.refresh();
    return this.sorted();
  }

  private sorted(): StoredDecision[] {
    return [...this.decisions.values()].sort((a, b) => a.tool.localeCompare(b.tool));
  }

  set(tool: string, decision: 'allow' | 'deny', plugin: string | null, at: Date): void {
    this.refresh();
    this.decisions.set(tool, { tool, decision, plugin, at: at.toISOString() });
    this.save();
  }

  /** Removes a tool's stored decision; false if there was none. */
  revoke(tool: string): boolean {
    this.refresh();
    if (!this.decisions.delete(tool)) return false;
    this.save();
    return true;
  }

  private save(): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    if (this.problem && fs.existsSync(this.file)) {
      // Keep what could not be read: the person may want it back.
      const aside = `${this.file}.corrupt-${Date.now()}`;
      fs.renameSync(this.file, aside);
      this.logger.warn(`moved the unreadable ${path.basename(this.file)} aside to ${aside}`);
      this.problem = null;
    }
    const shape: FileShape = { version: 1, decisions: {} };
    for (const d of this.sorted()) shape.decisions[d.tool] = { decision: d.decision, plugin: d.plugin, at: d.at };
    writeFileAtomic(this.file, JSON.stringify(shape, null, 2) + '\n');
    this.stamp = fileStamp(this.file);
  }
}
