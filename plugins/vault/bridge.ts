/**
 * The desktop bridge (`vault_desktop_read` / `vault_desktop_write`): an operation name and an args
 * array, dispatched only to the allowlisted operations below. A name outside the allowlist is a
 * structured error, never a fallback: the seed's deliberately excluded operations (whole-scene canvas
 * access, account, auth, provider, updater, telemetry...) say why and what to use instead; any other
 * name says it is unknown and lists what exists.
 *
 * Each operation declares its own effect: a read runs only through `vault_desktop_read`, a write or
 * delete only through `vault_desktop_write`, and a delete is asked every time (the bridge's assess
 * raises a concern no standing approval covers). An operation's own failures answer in the seed's
 * shape, `{"success": false, "error": "..."}`, wrong arguments and unknown items included (a write's
 * answered before anyone is asked: the kernel's ToolAnswer); a call the bridge itself cannot take
 * (unknown name, the feature switched off) and the sandbox's refusals are errors.
 */
import type { BridgeOp } from './bridge-op.js';
import { isMemoError, MemoError, type Concern, type JsonValue, type Preview, type ToolAnswer, type ToolContext } from 'memo-kernel/pack';
import { BRIDGE_CALENDAR_OPS } from './bridge-calendar.js';
import { BRIDGE_INBOX_OPS } from './bridge-inbox.js';
import { BRIDGE_NOTE_OPS } from './bridge-notes.js';
import { BRIDGE_ORGANIZE_OPS } from './bridge-organize.js';
import { BRIDGE_PROJECT_OPS } from './bridge-projects.js';
import { BRIDGE_PROPERTY_OPS } from './bridge-properties.js';
import { BRIDGE_REMINDER_OPS } from './bridge-reminders.js';
import { BRIDGE_SETTINGS_OPS } from './bridge-settings.js';
import { BRIDGE_TAG_OPS } from './bridge-tags.js';
import { requireFeature } from './features.js';
import type { ToolArgs } from './tool-args.js';
import { shown } from './vault.js';

/** The operations this project implements of the seed's allowlist, by name. */
export const ALLOWLIST: readonly string[] = [
  'notes.resolveWikiTarget',
  'notes.resolveByTitle',
  'notes.applyTemplate',
  'notes.importFiles',
  'templates.get',
  'inbox.captureLink',
  'inbox.convertToNote',
  'inbox.convertToTask',
  'inbox.convertToEvent',
  'inbox.convertToReminder',
  'tasks.listProjectLinks',
  'tasks.listProjectContents',
  'tasks.listForItem',
  'tasks.linkProjectItem',
  'tasks.unlinkProjectItem',
  'tasks.setProjectLinkPinned',
  'tasks.setProjectHomeNote',
  'tasks.captureUrlToProject',
  'tasks.importFilesToProject',
  'tags.listCategories',
  'tags.createCategory',
  'tags.renameCategory',
  'tags.deleteCategory',
  'tags.reorder',
  'settings.getFeaturesSettings',
  'settings.setFeaturesSettings',
  'settings.getInboxSettings',
  'settings.setInboxSettings',
  'calendar.listEvents',
  'calendar.getRange',
  'calendar.createEvent',
  'calendar.updateEvent',
  'calendar.deleteEvent',
  'properties.list',
  'properties.get',
  'properties.set',
  'properties.remove',
  'search.reasons',
  'savedFilters.list',
  'savedFilters.run',
  'savedFilters.create',
  'savedFilters.update',
  'savedFilters.delete',
  'savedFilters.reorder',
  'bookmarks.list',
  'bookmarks.add',
  'bookmarks.remove',
  'bookmarks.reorder',
  'folderViews.get',
  'folderViews.list',
  'folderViews.set',
  'folderViews.reset',
  'reminders.list',
  'reminders.history',
  'reminders.create',
  'reminders.update',
  'reminders.delete',
  'settings.getReminderSettings',
  'settings.setReminderSettings',
];

/** The seed's deliberately excluded operations, each with why and what to use instead. */
export const EXCLUDED: Readonly<Record<string, string>> = {
  'canvas.get': 'it returns the whole scene; use vault_read_canvas or vault_read_canvas_elements',
  'canvas.update': 'it replaces the entire scene with no version check, which would overwrite whatever is open; use the canvas item and drawing tools',
  'canvas.librarySave': 'it saves the shape library as one whole list, so a partial one deletes shapes',
  'canvas.uploadAsset': 'binary image upload has no agent path',
};

/**
 * Whole domains that stay outside the allowlist (the seed: account and auth flows, provider connect,
 * disconnect and refresh, the updater, external open/reveal, import dialogs, OS settings panes,
 * telemetry, feedback and diagnostics, raw secret writes, Google integration).
 */
const EXCLUDED_DOMAINS: ReadonlyArray<[RegExp, string]> = [
  [/^(account|accounts|auth|login|logout|session|sessions)\./i, 'account and sign-in operations stay outside the agent allowlist'],
  [/^(provider|providers|oauth|sync)\./i, 'provider connect, disconnect and refresh operations stay outside the agent allowlist'],
  [/^(updater|update|updates|app)\./i, 'app and updater operations stay outside the agent allowlist'],
  [/^(shell|os|system|window|dialog|dialogs)\./i, 'operations that open native UI or hand an item to the OS stay outside the agent allowlist'],
  [/^(telemetry|analytics|feedback|diagnostics|crash|logs)\./i, 'telemetry, feedback and diagnostics reporting stay outside the agent allowlist'],
  [/^(secrets|secret|keychain|credentials|vault\.secrets)\./i, 'raw secret reads and writes stay outside the agent allowlist'],
  [/^(google|gcal)\./i, 'Google-integration operations are excluded from the agent allowlist outright'],
  [
    /^calendar\.(listSources|getSources|addSource|removeSource|connect|disconnect|promote|googleSettings|getGoogleSettings|setGoogleSettings|providerStatus)/i,
    'calendar sources, provider status and Google calendar settings are excluded from the agent allowlist outright',
  ],
  [
    /\.(open|reveal|openExternal|showItemInFolder|showInFolder|openPath)$/i,
    'operations that open native UI or hand an item to the OS stay outside the agent allowlist',
  ],
  [
    /\.(import|importDialog|showImportDialog|pickFiles|chooseFolder)$/i,
    'import dialogs stay outside the agent allowlist (notes.importFiles takes paths instead)',
  ],
];

const REGISTRY: ReadonlyMap<string, BridgeOp> = new Map(
  [
    ...BRIDGE_NOTE_OPS,
    ...BRIDGE_INBOX_OPS,
    ...BRIDGE_PROJECT_OPS,
    ...BRIDGE_TAG_OPS,
    ...BRIDGE_SETTINGS_OPS,
    ...BRIDGE_CALENDAR_OPS,
    ...BRIDGE_PROPERTY_OPS,
    ...BRIDGE_ORGANIZE_OPS,
    ...BRIDGE_REMINDER_OPS,
  ].map((o) => [o.name, o]),
);

/** Why a name is not an operation the bridge runs (null: it is one). */
export function refusal(name: string): { rule: 'bridge-excluded' | 'bridge-unknown' | 'bridge-unavailable'; reason: string } | null {
  if (REGISTRY.has(name)) return null;
  const excluded = EXCLUDED[name] ?? EXCLUDED_DOMAINS.find(([re]) => re.test(name))?.[1];
  if (excluded) return { rule: 'bridge-excluded', reason: excluded };
  if (ALLOWLIST.includes(name)) return { rule: 'bridge-unavailable', reason: 'it is on the allowlist but this build does not offer it yet' };
  return { rule: 'bridge-unknown', reason: 'it is not an operation of the desktop bridge' };
}

function listOf(kind: 'read' | 'write'): string {
  return [...REGISTRY.values()]
    .filter((o) => (o.effect === 'read') === (kind === 'read'))
    .map((o) => o.name)
    .join(', ');
}

/** The operation for a call through the given tool, or a structured error: excluded, unknown, or the other tool's. */
function resolveOp(name: string, through: 'read' | 'write'): BridgeOp {
  const why = refusal(name);
  if (why) {
    const code = why.rule === 'bridge-excluded' ? 'PERMISSION_DENIED' : 'VALIDATION';
    throw new MemoError(code, `${shown(name)} is not available through the desktop bridge: ${why.reason}. Operations: ${listOf(through)}.`, {
      details: { operation: name, rule: why.rule },
    });
  }
  const o = REGISTRY.get(name)!;
  if (through === 'read' && o.effect !== 'read')
    throw new MemoError('VALIDATION', `${name} changes the vault: call it through vault_desktop_write.`, { details: { operation: name, effect: o.effect } });
  if (through === 'write' && o.effect === 'read')
    throw new MemoError('VALIDATION', `${name} only reads: call it through vault_desktop_read.`, { details: { operation: name, effect: o.effect } });
  return o;
}

/** The operation's arguments parsed, or what is wrong with them, the operation's usage appended. */
function parseArgs(o: BridgeOp, args: { args?: unknown[] }): { ok: true; p: unknown } | { ok: false; err: MemoError } {
  try {
    // The kernel validated the call against the manifest: what arrived is JSON.
    return { ok: true, p: o.parse((args.args ?? []) as JsonValue[]) };
  } catch (err) {
    if (!isMemoError(err)) throw err;
    return { ok: false, err: new MemoError(err.code, `${err.message} (${o.usage})`) };
  }
}

async function prepared(args: { operation: string; args?: unknown[] }, ctx: ToolContext, through: 'read' | 'write') {
  const o = resolveOp(args.operation.trim(), through);
  if (o.feature) await requireFeature(ctx, o.feature);
  const parsed = parseArgs(o, args);
  if (!parsed.ok) throw new MemoError(parsed.err.code, `${o.name}: ${parsed.err.message}`, { details: { operation: o.name } });
  return { o, p: parsed.p };
}

/** An operation's answer in the seed's shape: its own failures are `{success: false, error}`, not MCP errors. */
async function answer(o: BridgeOp, p: unknown, ctx: ToolContext): Promise<Record<string, unknown>> {
  try {
    const out = await o.run(p, ctx);
    return { success: true, ...out, operation: o.name };
  } catch (err) {
    if (!isMemoError(err) || err.code === 'CANCELLED' || err.code === 'TIMEOUT') throw err;
    return failed(o, err);
  }
}

/** An operation's failure in the seed's shape (its arguments, a lookup, its own run). */
function failed(o: BridgeOp, err: MemoError): { [key: string]: JsonValue } {
  return { success: false, error: err.message, code: err.code, operation: o.name, summary: `${o.name} failed: ${err.message}` };
}

/**
 * Failures of an operation's arguments and lookups that answer in the seed's shape. The sandbox's
 * refusals (a path outside the root, protected, kernel state) stay errors: they are the kernel's
 * wall, not the operation's own failure.
 */
const ANSWERED = new Set(['VALIDATION', 'NOT_FOUND', 'CONFLICT']);

/**
 * A read: an operation's own failures, its arguments included, answer `{success: false, error}` (the
 * seed: "check success before reading the payload"); a name that is not a read operation of the
 * bridge, or a switched-off feature, is the bridge's refusal (a structured MCP error).
 */
export async function desktopRead(args: ToolArgs['vault_desktop_read'], ctx: ToolContext) {
  const o = resolveOp(args.operation.trim(), 'read');
  if (o.feature) await requireFeature(ctx, o.feature);
  const parsed = parseArgs(o, args);
  return parsed.ok ? answer(o, parsed.p, ctx) : failed(o, parsed.err);
}

export const desktopWrite = {
  /**
   * A call that cannot run (its arguments, an item that is not there) is answered `{success: false}`
   * without anyone being asked (the kernel's ToolAnswer); a delete is asked every time.
   */
  assess: async (args: ToolArgs['vault_desktop_write'], ctx: ToolContext): Promise<Concern | ToolAnswer | null> => {
    const o = resolveOp(args.operation.trim(), 'write');
    if (o.feature) await requireFeature(ctx, o.feature);
    const parsed = parseArgs(o, args);
    if (!parsed.ok) {
      if (!ANSWERED.has(parsed.err.code)) throw parsed.err;
      return { verdict: 'answer', value: failed(o, parsed.err) };
    }
    try {
      await o.check?.(parsed.p, ctx);
    } catch (err) {
      if (!isMemoError(err) || !ANSWERED.has(err.code)) throw err;
      return { verdict: 'answer', value: failed(o, err) };
    }
    if (o.effect === 'delete')
      return { verdict: 'ask', rule: 'bridge-delete', reason: `${o.name} deletes: a delete is asked every time, whatever was allowed before.` };
    if (o.askEveryTime)
      return {
        verdict: 'ask',
        rule: 'bridge-note-edit',
        reason: `${o.name} edits a note's text: note edits are asked every time, whatever was allowed before.`,
      };
    return null;
  },
  preview: async (args: ToolArgs['vault_desktop_write'], ctx: ToolContext): Promise<Preview> => {
    const { o, p } = await prepared(args, ctx, 'write');
    const own = o.preview ? await o.preview(p, ctx) : { kind: 'text' as const, text: JSON.stringify(args.args ?? []) };
    const notes = [`${o.name} (${o.effect === 'delete' ? 'delete: asked every time' : o.askEveryTime ? 'note edit: asked every time' : o.effect})`];
    if (o.network) notes.push('This fetches from the network (the address given).');
    return { kind: own.kind, text: `${notes.join('\n')}\n${own.text}` };
  },
  run: async (args: ToolArgs['vault_desktop_write'], ctx: ToolContext) => {
    const { o, p } = await prepared(args, ctx, 'write');
    return answer(o, p, ctx);
  },
};
