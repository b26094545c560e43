/**
 * The tools each MCP client found with find_tools, in tool-search mode: its `tools/list` is
 * find_tools plus these. Kept per client key, in memory, for as long as the client keeps using them:
 *
 * - a 2025-11-25 session: its session id (gone when the session ends);
 * - a 2026-07-28 client, which has no session: the name and version it declares on every request
 *   (`name@version`), so its next request, on any connection, lists what it found;
 * - stdio: the one client of the process.
 *
 * An entry not touched (by a list or a call of that client) for `ttlMs` is dropped, and at most
 * `maxClients` are kept (the least recently used goes first): a client that comes back after that
 * finds its tools again. Nothing here grants anything: every tool of the profile can be called by
 * name whether or not it was found, and every call goes through the pipeline.
 */

/** How long a client's found tools are kept without use. */
export const FOUND_TOOLS_TTL_MS = 30 * 60_000;
/** Clients whose found tools are kept at once. */
export const FOUND_TOOLS_MAX_CLIENTS = 1024;
/** Tools one client may have found at once; the oldest found go first past it. */
export const FOUND_TOOLS_MAX_PER_CLIENT = 64;

interface Entry {
  names: Set<string>;
  touched: number;
}

export class FoundTools {
  /** Least recently used first. */
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly options: { ttlMs?: number; maxClients?: number; now?: () => number } = {}) {}

  private get ttl(): number {
    return this.options.ttlMs ?? FOUND_TOOLS_TTL_MS;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** The tools `key` has found and not lost to expiry, in the order found; touches the entry. */
  get(key: string): string[] {
    const entry = this.live(key);
    if (!entry) return [];
    this.touch(key, entry);
    return [...entry.names];
  }

  /** Adds tools `key` found; true when any of them was new to it (its list changed). */
  add(key: string, names: readonly string[]): boolean {
    const entry = this.live(key) ?? { names: new Set<string>(), touched: 0 };
    let changed = false;
    for (const name of names) {
      if (entry.names.has(name)) continue;
      entry.names.add(name);
      changed = true;
      if (entry.names.size > FOUND_TOOLS_MAX_PER_CLIENT) entry.names.delete(entry.names.values().next().value as string);
    }
    this.touch(key, entry);
    return changed;
  }

  /** Forgets a client (its session ended). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /** How many clients have found tools now (expired ones not counted). */
  get size(): number {
    this.sweep();
    return this.entries.size;
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && this.now() - entry.touched > this.ttl) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private touch(key: string, entry: Entry): void {
    entry.touched = this.now();
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.sweep();
    const max = this.options.maxClients ?? FOUND_TOOLS_MAX_CLIENTS;
    while (this.entries.size > max) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** Drops expired entries from the least recently used end. */
  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (now - entry.touched <= this.ttl) break;
      this.entries.delete(key);
    }
  }
}
