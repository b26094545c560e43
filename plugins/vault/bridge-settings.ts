/**
 * Desktop bridge operations: settings (see bridge.ts for the contract every operation keeps). The
 * feature switches (features.ts) and the daily inbox review reminder, both per vault in
 * vault_settings. Writes show only the switches that move, and the run refuses when what the preview
 * showed changed meanwhile.
 */
import type { EntityManager } from 'typeorm';
import { MemoError, type JsonValue, type ToolContext } from 'memo-kernel/pack';
import { booleanArg, objectArg, onlyKeys, noArgs, op, type BridgeOp } from './bridge-op.js';
import { FEATURES, featuresOf, readSetting, writeSetting, type FeatureSettings } from './features.js';
import { checkFields, fieldsPreview, inPlanning, planningDb, rememberFields } from './planning-store.js';

const em = async (ctx: ToolContext): Promise<EntityManager> => (await planningDb(ctx)).manager;

// ---------------------------------------------------------------------------------------------
// Feature switches

function parseFeatures(args: JsonValue[]): Partial<FeatureSettings> {
  const o = objectArg(args);
  onlyKeys(o, FEATURES);
  const out: Partial<FeatureSettings> = {};
  for (const f of FEATURES) if (o[f] !== undefined) out[f] = booleanArg(o[f], f);
  if (!Object.keys(out).length) throw new MemoError('VALIDATION', `say which switches to set (${FEATURES.join(', ')}).`);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The inbox review reminder

interface InboxSettings {
  reviewReminder: boolean;
  /** HH:MM, local time of the person's device. */
  reviewTime: string;
}

const INBOX_DEFAULTS: InboxSettings = { reviewReminder: false, reviewTime: '09:00' };
const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;

/** The stored inbox settings over the defaults (a value of the wrong type reads as the default). */
async function inboxSettingsOf(m: EntityManager): Promise<InboxSettings> {
  const stored = await readSetting(m, 'inbox');
  const out = { ...INBOX_DEFAULTS };
  if (stored && typeof stored === 'object') {
    const s = stored as Record<string, unknown>;
    if (typeof s.reviewReminder === 'boolean') out.reviewReminder = s.reviewReminder;
    if (typeof s.reviewTime === 'string' && HHMM.test(s.reviewTime)) out.reviewTime = s.reviewTime;
  }
  return out;
}

function parseInbox(args: JsonValue[]): Partial<InboxSettings> {
  const o = objectArg(args);
  onlyKeys(o, ['reviewReminder', 'reviewTime']);
  const out: Partial<InboxSettings> = {};
  if (o.reviewReminder !== undefined) out.reviewReminder = booleanArg(o.reviewReminder, 'reviewReminder');
  if (o.reviewTime !== undefined) {
    if (typeof o.reviewTime !== 'string' || !HHMM.test(o.reviewTime.trim()))
      throw new MemoError('VALIDATION', 'reviewTime must be a time of day as HH:MM (24-hour, such as 09:00).');
    out.reviewTime = o.reviewTime.trim();
  }
  if (!Object.keys(out).length) throw new MemoError('VALIDATION', 'say what to set: reviewReminder, reviewTime or both.');
  return out;
}

/** The values now of the keys a call sets (what the preview shows in the "before" place). */
const pickOf = <T extends object>(all: T, p: Partial<T>) => Object.fromEntries(Object.keys(p).map((k) => [k, all[k as keyof T]]));

export const BRIDGE_SETTINGS_OPS: BridgeOp[] = [
  op<null>({
    name: 'settings.getFeaturesSettings',
    effect: 'read',
    usage: 'args [] -> {features: {home, inbox, journal, tasks, calendar, graph, canvas}}',
    parse: noArgs,
    run: async (_p, ctx) => ({ features: await featuresOf(await em(ctx)) }),
  }),
  op<Partial<FeatureSettings>>({
    // No `feature` of its own: it is how a switched-off surface is turned back on.
    name: 'settings.setFeaturesSettings',
    effect: 'write',
    usage: 'args [{home?, inbox?, journal?, tasks?, calendar?, graph?, canvas?}] (true or false each) -> {features}',
    parse: parseFeatures,
    preview: async (p, ctx) => {
      const before = pickOf(await featuresOf(await em(ctx)), p);
      rememberFields(ctx, before);
      return fieldsPreview('Feature switches', before, p);
    },
    run: inPlanning(async (m, p, ctx) => {
      const all = await featuresOf(m);
      checkFields(ctx, 'The feature switches', pickOf(all, p));
      const features = { ...all, ...p };
      await writeSetting(m, 'features', features);
      const changed = FEATURES.filter((f) => all[f] !== features[f]);
      return {
        features,
        changed,
        summary: changed.length ? `switched ${changed.map((f) => `${f} ${features[f] ? 'on' : 'off'}`).join(', ')}` : 'no switch changed',
      };
    }),
  }),
  op<null>({
    name: 'settings.getInboxSettings',
    effect: 'read',
    usage: 'args [] -> {inbox: {reviewReminder, reviewTime}}',
    parse: noArgs,
    run: async (_p, ctx) => ({ inbox: await inboxSettingsOf(await em(ctx)) }),
  }),
  op<Partial<InboxSettings>>({
    name: 'settings.setInboxSettings',
    effect: 'write',
    usage: 'args [{reviewReminder?: boolean, reviewTime?: "HH:MM"}] -> {inbox}',
    parse: parseInbox,
    preview: async (p, ctx) => {
      const before = pickOf(await inboxSettingsOf(await em(ctx)), p);
      rememberFields(ctx, before);
      return fieldsPreview('Inbox review reminder', before, p);
    },
    run: inPlanning(async (m, p, ctx) => {
      const all = await inboxSettingsOf(m);
      checkFields(ctx, 'The inbox settings', pickOf(all, p));
      const inbox = { ...all, ...p };
      await writeSetting(m, 'inbox', inbox);
      return {
        inbox,
        summary: inbox.reviewReminder ? `daily inbox review reminder at ${inbox.reviewTime}` : 'daily inbox review reminder off',
      };
    }),
  }),
];
