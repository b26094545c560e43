/**
 * The provider registry's DI token and interface (model wire formats packs contribute, and providers
 * made from configurations); the kernel's own is provider-registry.ts.
 */
import type { Disposable } from '../disposable.js';
import type { ModelProvider, ProviderConfig, ProviderFactory } from './provider.js';

/** Model wire formats packs contribute, and providers made from configurations. */
export const ProviderRegistry = Symbol('ProviderRegistry');
export interface ProviderRegistry {
  register(kind: string, factory: ProviderFactory, owner: string): Disposable;
  kinds(): string[];
  /** A provider for a configuration (`{ name, kind: 'openai-compatible', baseUrl, model, ... }`); NOT_FOUND for an unknown kind. */
  create(config: ProviderConfig, fetchImpl?: typeof fetch): ModelProvider;
}
