import { randomUUID } from 'node:crypto';
import { isMemoError } from '../errors.js';
import type { AgentKernel as Kernel } from './agent-kernel.js';
import { PathSandbox } from '../sandbox/path-sandbox.js';
import type { ItemRef, ItemType, ToolContext } from '../tools/contract.js';

/** What the vault pack offers under `vault.entities` (the part chat uses), looked up, never imported. */
interface VaultEntities {
  find(ctx: ToolContext, type: 'note' | 'task', ref: string): Promise<{ type: 'note' | 'task'; id: string; title: string; path?: string } | null>;
}

export interface MentionReference {
  /** As typed, without the `@`. */
  mention: string;
  type: ItemType;
  id: string;
  title: string;
  path?: string;
}

export interface ResolvedMentions {
  /** The message with a reference list after it (unchanged when nothing resolved). */
  message: string;
  references: MentionReference[];
  /** Mentions that matched nothing (or more than one thing), with why, for the person. */
  unresolved: Array<{ mention: string; reason: string }>;
}

/**
 * `@"Title with spaces"`, `@[[Title]]` or `@word`, at the start or after a space (so an e-mail
 * address is not a mention). Trailing punctuation of a bare word is not part of it.
 */
const MENTION = /(?<=^|\s)@(?:"([^"\n]+)"|\[\[([^\]\n]+)\]\]|([^\s"[]+[^\s.,;:!?)"'\]]))/g;

export function findMentions(message: string): string[] {
  const out: string[] = [];
  for (const m of message.matchAll(MENTION)) {
    const ref = (m[1] ?? m[2] ?? m[3] ?? '').trim();
    if (ref && !out.includes(ref)) out.push(ref);
  }
  return out;
}

/**
 * Resolves vault `@mentions` to references (seed 003: a mention submits as readable text plus a
 * structured reference) when the vault pack is loaded and offers `vault.entities`; without it the
 * message goes as typed. A note is tried first, then a task. Only the reference (type, id, title,
 * path) is added: the model reads the item with the vault's tools, through the gate, if it needs to.
 */
export async function resolveMentions(
  kernel: Kernel,
  message: string,
  signal: AbortSignal = new AbortController().signal,
  picked: readonly ItemRef[] = [],
): Promise<ResolvedMentions> {
  // Items picked from a face's mention picker come as references already: their @Title is not looked up again.
  const pickedRefs: MentionReference[] = picked.map((p) => ({ mention: p.title, type: p.type, id: p.id, title: p.title }));
  const mentions = findMentions(withoutPicked(message, picked));
  const vault = kernel.shared.lookup<VaultEntities>('vault.entities');
  if (mentions.length === 0 || !vault) return withReferences(message, pickedRefs, []);
  // The vault runs `find` with its own settings and data folder; the rest is the kernel's, as for a tool.
  const ctx: ToolContext = {
    signal,
    caller: { kind: 'cli', id: 'chat-mention' },
    callId: randomUUID(),
    tool: 'chat_mention',
    plugin: 'kernel',
    root: kernel.config.root,
    sandbox: new PathSandbox(kernel.config.root, kernel.state),
    judge: kernel.judge,
    dataDir: kernel.config.dataDir,
    config: {},
    progress: () => {},
  };
  const references: MentionReference[] = [...pickedRefs];
  const unresolved: ResolvedMentions['unresolved'] = [];
  for (const mention of mentions) {
    try {
      const hit = (await vault.find(ctx, 'note', mention)) ?? (await vault.find(ctx, 'task', mention));
      if (hit) references.push({ mention, type: hit.type, id: hit.id, title: hit.title, ...(hit.path ? { path: hit.path } : {}) });
      else unresolved.push({ mention, reason: 'no note or task by that name' });
    } catch (err) {
      // An ambiguous name, or no vault set up: the mention stays plain text, and the person is told.
      if (isMemoError(err)) unresolved.push({ mention, reason: err.message });
      else throw err;
    }
  }
  return withReferences(message, references, unresolved);
}

/** The message with the picked items' `@Title` taken out, for finding the mentions typed by hand. */
function withoutPicked(message: string, picked: readonly ItemRef[]): string {
  let rest = message;
  for (const p of picked) rest = rest.split(`@${p.title}`).join(' ');
  return rest;
}

/** The message with a reference list after it (unchanged when nothing resolved). */
function withReferences(message: string, references: MentionReference[], unresolved: ResolvedMentions['unresolved']): ResolvedMentions {
  if (references.length === 0) return { message, references, unresolved };
  const lines = references.map((r) => `- @${r.mention}: ${r.type} "${r.title}" (id ${r.id}${r.path ? `, path ${r.path}` : ''})`);
  return { message: `${message}\n\nMentioned vault items:\n${lines.join('\n')}`, references, unresolved };
}
