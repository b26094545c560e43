/**
 * Per-vault settings (table vault_settings): the feature switches the seed names (home, inbox,
 * journal, tasks, calendar, graph, spatial canvas) and the daily inbox review. A surface switched off
 * answers every call with a message saying so (TOOL_DISABLED, with the feature named), never silence.
 */
import type { EntityManager } from 'typeorm';
import { MemoError, type ToolContext } from 'memo-kernel/pack';
import { planningDb, schema } from './planning-store.js';

export const FEATURES = ['home', 'inbox', 'journal', 'tasks', 'calendar', 'graph', 'canvas'] as const;
export type Feature = (typeof FEATURES)[number];
export type FeatureSettings = Record<Feature, boolean>;

const LABELS: Record<Feature, string> = {
  home: 'Home',
  inbox: 'Inbox',
  journal: 'Journal',
  tasks: 'Tasks',
  calendar: 'Calendar',
  graph: 'Graph',
  canvas: 'Spatial Canvas',
};

/** Every surface is on until someone switches it off. */
const DEFAULT_FEATURES: FeatureSettings = { home: true, inbox: true, journal: true, tasks: true, calendar: true, graph: true, canvas: true };

/** A setting's stored JSON value, or undefined when it was never written. */
export async function readSetting(em: EntityManager, key: string): Promise<unknown> {
  const { VaultSettingRow } = await schema();
  const row = await em.findOneBy(VaultSettingRow, { key });
  return row ? (JSON.parse(row.value) as unknown) : undefined;
}

export async function writeSetting(em: EntityManager, key: string, value: unknown): Promise<void> {
  const { VaultSettingRow } = await schema();
  await em.save(VaultSettingRow, { key, value: JSON.stringify(value) });
}

/** The switches in force: the stored ones over the defaults (a switch the stored value lacks is on). */
export async function featuresOf(em: EntityManager): Promise<FeatureSettings> {
  const stored = await readSetting(em, 'features');
  const out = { ...DEFAULT_FEATURES };
  if (stored && typeof stored === 'object') {
    for (const f of FEATURES) {
      const v = (stored as Record<string, unknown>)[f];
      if (typeof v === 'boolean') out[f] = v;
    }
  }
  return out;
}

export async function featureOn(ctx: ToolContext, feature: Feature): Promise<boolean> {
  return (await featuresOf((await planningDb(ctx)).manager))[feature];
}

export function featureOffError(feature: Feature): MemoError {
  return new MemoError(
    'TOOL_DISABLED',
    `The ${LABELS[feature]} feature is switched off in this vault's settings, so this is not available. ` +
      `A person can turn it on (vault_desktop_write settings.setFeaturesSettings [{"${feature}": true}]).`,
    { details: { feature } },
  );
}

/** Throws TOOL_DISABLED naming the feature when it is switched off. */
export async function requireFeature(ctx: ToolContext, feature: Feature): Promise<void> {
  if (!(await featureOn(ctx, feature))) throw featureOffError(feature);
}
