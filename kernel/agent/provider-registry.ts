import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';
import type { ModelProvider, ProviderConfig, ProviderFactory } from '../providers/provider.js';

/** Wire formats packs contribute (`openai-compatible`, `anthropic`, ...), and providers made from configurations. */
export class ProviderRegistry {
  private readonly factories = new Map<string, { factory: ProviderFactory; owner: string }>();

  register(kind: string, factory: ProviderFactory, owner: string): Disposable {
    const existing = this.factories.get(kind);
    if (existing && existing.owner !== owner)
      throw new MemoError('CONFLICT', `Provider kind "${kind}" is already provided by pack "${existing.owner}".`, { plugin: owner });
    const entry = { factory, owner };
    this.factories.set(kind, entry);
    return toDisposable(() => {
      if (this.factories.get(kind) === entry) this.factories.delete(kind);
    });
  }

  kinds(): string[] {
    return [...this.factories.keys()].sort();
  }

  create(config: ProviderConfig, fetchImpl: typeof fetch = fetch): ModelProvider {
    const entry = this.factories.get(config.kind);
    if (!entry) {
      const kinds = this.kinds();
      throw new MemoError(
        'NOT_FOUND',
        `No loaded pack provides the provider kind "${config.kind}"${kinds.length ? ` (available: ${kinds.join(', ')})` : ' (is the providers pack enabled?)'}.`,
      );
    }
    return entry.factory(config, { fetch: fetchImpl });
  }
}
