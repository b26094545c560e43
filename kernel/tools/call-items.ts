/**
 * The items a call's result names (ItemRef), as the tool's own `items` says: bounded and checked
 * here, so a face can link them without trusting the pack's shapes. A tool whose `items` throws or
 * answers nonsense loses its links, never its result.
 */
import { ITEM_TYPES, type ItemRef, type JsonValue, type ToolContext } from './contract.js';
import type { RegisteredTool } from './tool-registry.js';
import type { Logger } from '../logger.js';

/** The most items one result links (a list of 500 notes links its first 200). */
export const ITEM_LIMIT = 200;
const MAX_ID = 500;
const MAX_TITLE = 300;
const TYPES = new Set<string>(ITEM_TYPES);
/** One emoji (or a short symbol sequence), never text: an icon is shown in a slot of its own. */
const ICON = /^(?=.*(?:\p{Extended_Pictographic}|\p{Regional_Indicator}))(?:\p{Extended_Pictographic}|\p{Emoji_Component}){1,16}$/u;

export function itemsOf(tool: RegisteredTool, value: JsonValue, args: Record<string, unknown>, ctx: ToolContext, logger?: Logger): ItemRef[] | undefined {
  if (!tool.items) return undefined;
  let found: unknown;
  try {
    found = tool.items(value, args, ctx);
  } catch (err) {
    logger?.warn(`${tool.spec.name}: its items could not be read from the result (${(err as Error)?.message ?? String(err)}); the result has no links`);
    return undefined;
  }
  if (!Array.isArray(found)) return undefined;
  const out: ItemRef[] = [];
  const seen = new Set<string>();
  for (const raw of found) {
    if (out.length >= ITEM_LIMIT) break;
    const r = raw as Partial<ItemRef> | null;
    if (!r || typeof r.type !== 'string' || !TYPES.has(r.type) || typeof r.id !== 'string' || !r.id || r.id.length > MAX_ID) continue;
    const key = `${r.type}:${r.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const title = typeof r.title === 'string' && r.title.trim() ? r.title.trim().slice(0, MAX_TITLE) : r.id.slice(0, MAX_TITLE);
    const item: ItemRef = { type: r.type, id: r.id, title };
    if (typeof r.icon === 'string' && ICON.test(r.icon)) item.icon = r.icon;
    out.push(item);
  }
  return out.length ? out : undefined;
}
