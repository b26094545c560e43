import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';

/**
 * Services packs offer each other by token (`vault.notes`), so a canvas can resolve vault notes
 * without importing the vault pack. A token has one provider at a time; what a pack provides is
 * withdrawn when it unloads or reloads, so consumers look a token up when they need it and never
 * keep the value across calls.
 */
export class SharedServices {
  private readonly entries = new Map<string, { owner: string; value: unknown }>();

  provide(owner: string, token: string, value: unknown): Disposable {
    if (typeof token !== 'string' || !/^[a-z][a-z0-9-]*(\.[a-z][a-zA-Z0-9-]*)+$/.test(token))
      throw new MemoError('VALIDATION', `Pack "${owner}" offers a service under "${String(token)}": tokens are dotted names such as "vault.notes".`, {
        plugin: owner,
      });
    if (value === undefined || value === null) throw new MemoError('VALIDATION', `Pack "${owner}" offers nothing under "${token}".`, { plugin: owner });
    const existing = this.entries.get(token);
    if (existing && existing.owner !== owner)
      throw new MemoError('CONFLICT', `Service "${token}" of pack "${owner}" is already provided by pack "${existing.owner}".`, { plugin: owner });
    const entry = { owner, value };
    this.entries.set(token, entry);
    return toDisposable(() => {
      if (this.entries.get(token) === entry) this.entries.delete(token);
    });
  }

  lookup<T>(token: string): T | undefined {
    return this.entries.get(token)?.value as T | undefined;
  }

  /** Token and providing pack of everything on offer. */
  list(): Array<{ token: string; pack: string }> {
    return [...this.entries].map(([token, e]) => ({ token, pack: e.owner })).sort((a, b) => a.token.localeCompare(b.token));
  }
}
