/**
 * What the vault offers other packs through the kernel (`api.provide`), never by import: the canvas
 * pack finds the vault folder, checks that a note or task exists before it becomes a card, and asks
 * whether its feature is switched on. Every method takes the calling tool's context; the vault runs it
 * with its own settings and data folder, so another pack never sees the vault's configuration.
 */
import { isMemoError, type PackApi, type ToolContext } from 'memo-kernel/pack';
import { featureOn, type Feature } from './features.js';
import { planningDb } from './planning-store.js';
import { runtimeOf } from './runtime.js';
import { findTask } from './task-tools.js';

export interface VaultEntity {
  type: 'note' | 'task';
  id: string;
  title: string;
  path?: string;
}

/** Offered under the token `vault.entities`. */
export interface VaultEntities {
  /** The vault folder: `folder` relative to the workspace root (for the sandbox), `real` its real path. NOT_FOUND when none is configured. */
  location(ctx: ToolContext): Promise<{ folder: string; real: string }>;
  /** A note (by id, path or title) or a task (by id or exact title); null when there is none. Ambiguous names throw VALIDATION. */
  find(ctx: ToolContext, type: 'note' | 'task', ref: string): Promise<VaultEntity | null>;
  /** Whether a surface is switched on in the vault's feature settings. */
  featureOn(ctx: ToolContext, feature: Feature): Promise<boolean>;
}

export function vaultEntities(api: PackApi): VaultEntities {
  // The caller's context with the vault's own settings and data folder.
  const mine = (ctx: ToolContext): ToolContext => ({ ...ctx, config: api.config(), dataDir: api.dataDir });
  const orNull = async <T>(fn: () => Promise<T>): Promise<T | null> => {
    try {
      return await fn();
    } catch (err) {
      if (isMemoError(err) && err.code === 'NOT_FOUND') return null;
      throw err;
    }
  };
  return {
    async location(ctx) {
      const vault = await runtimeOf(mine(ctx)).vault(mine(ctx));
      return { folder: vault.folder, real: vault.real };
    },
    async find(ctx, type, ref) {
      const c = mine(ctx);
      if (type === 'note') {
        const vault = await runtimeOf(c).vault(c);
        return orNull(() => Promise.resolve(vault.find(ref).note)).then((n) => (n ? { type, id: n.id, title: n.title, path: n.path } : null));
      }
      const em = (await planningDb(c)).manager;
      return orNull(() => findTask(em, ref)).then((t) => (t ? { type, id: t.id, title: t.title } : null));
    },
    featureOn: (ctx, feature) => featureOn(mine(ctx), feature),
  };
}
