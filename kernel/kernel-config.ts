/** The resolved, validated options of one kernel instance, and their DI token. */
import type { DatabaseUrl } from './storage/database-url.js';

export const KernelConfig = Symbol('KernelConfig');
export interface KernelConfig {
  root: string;
  dataDir: string;
  promptTimeoutMs: number;
  defaultToolTimeoutMs: number;
  /** The shared PostgreSQL database for pack databases and conversations, or null: SQLite files in dataDir. Prints with its password masked. */
  database: DatabaseUrl | null;
  /**
   * Where the OS sandbox cannot start: refuse commands (the default) or run them judged only. A
   * person's setting (`memo settings sandbox`), never a tool's.
   */
  sandboxFallback?: 'refuse' | 'judged';
}
