/**
 * How every face shows a permission request, in one place: the terminal's box, `memo chat`'s inline
 * question, `memo approvals list`, and the web console (which renders `ApprovalView.display`).
 *
 * The order is the point: first the facts the kernel and the tool vouch for (the caller, the
 * concern, a routine's schedule, model and grants), each one line and never cut; then the preview's
 * body (a diff, field changes), cut when long; last the text the caller wrote (a routine's prompt, a
 * message), as one quoted line labelled with who wrote it. Line breaks and control characters are
 * shown as marks everywhere, so model-written text cannot print a line that passes for a fact, push
 * the facts out of sight, or move a terminal's cursor (an ANSI escape in a file being written).
 */
import type { Caller, Concern, Preview } from '../tools/contract.js';

/** How much of one quoted text is shown; the rest is counted (`… (+N chars)`), and the arguments hold it whole. */
export const QUOTE_CHARS = 2000;

/** What a face needs of a request to show it: a PermissionRequest and an ApprovalView both have it. */
export interface ApprovalShown {
  caller: Pick<Caller, 'id' | 'conversationId'> & { kind: string };
  preview: Preview | null;
  concern?: Concern | undefined;
  /** An external MCP client's write: the name it declares (see PermissionRequest.external). */
  external?: string | undefined;
  revision: number;
  editedBy?: string | undefined;
  editProblem?: string | undefined;
}

/** One line a face shows before anything the caller wrote: `by` the kernel (caller, concern) or the tool (its preview's facts). */
export interface DisplayFact {
  label: string;
  value: string;
  by: 'kernel' | 'tool';
}

/** Caller-written text as a face shows it: one line, escaped, at most QUOTE_CHARS characters (`more`: how many were left out). */
export interface DisplayQuote {
  label: string;
  /** Who wrote it: the model, an MCP client... or what the tool named (`the calendar`). */
  from: string;
  text: string;
  more: number;
}

/** A request ready to show, every string already escaped. */
export interface ApprovalDisplay {
  facts: DisplayFact[];
  /** The preview's body as lines (line breaks kept, every other control character escaped); null when there is none. */
  body: { kind: Preview['kind']; lines: string[] } | null;
  quoted: DisplayQuote[];
}

// C0 and C1 controls, DEL, the line and paragraph separators, the bidirectional controls (which
// reorder what follows them), and ⏎ itself, the mark a line break is shown as.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\u23ce]/g;
// In a body, tabs stay (code is indented with them) and a line break is a line break.
// eslint-disable-next-line no-control-regex -- as above
const UNSAFE_IN_BODY = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function mark(c: string): string {
  if (c === '\n') return '⏎';
  if (c === '\t') return '\\t';
  if (c === '\r') return '\\r';
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** Text as one line: a line break shown as ⏎, any other control character as an escape (`\u001b`, `\u202e`). */
export function visibleLine(text: string): string {
  return String(text).replace(/\r\n/g, '\n').replace(UNSAFE, mark);
}

/** A body as lines: split at line breaks (CRLF too), control characters other than tabs escaped; a final line break adds no empty line. */
export function visibleBody(text: string): string[] {
  const lines = String(text).split(/\r?\n/);
  if (lines.length > 1 && lines.at(-1) === '') lines.pop();
  return lines.map((l) => l.replace(UNSAFE_IN_BODY, mark));
}

/** Who wrote a call's free text, by its caller's kind. */
function writer(kind: string): string {
  switch (kind) {
    case 'agent':
    case 'routine':
      return 'the model';
    case 'mcp':
      return 'the MCP client';
    case 'cli':
      return 'whoever ran the command';
    default:
      return 'the host app';
  }
}

export function callerText(c: ApprovalShown['caller']): string {
  return visibleLine(`${c.kind}${c.id ? ` "${c.id}"` : ''}${c.conversationId ? `, conversation ${c.conversationId}` : ''}`);
}

/** A judge's reason names its rule already when it starts with it; otherwise the rule follows. */
function concernText(c: Concern): string {
  return visibleLine(c.reason.startsWith(`${c.rule}:`) ? c.reason : `${c.reason} (${c.rule})`);
}

function quote(label: string, from: string, text: string): DisplayQuote {
  const chars = Array.from(String(text));
  return {
    label: visibleLine(label),
    from: visibleLine(from),
    text: visibleLine(chars.slice(0, QUOTE_CHARS).join('')),
    more: Math.max(0, chars.length - QUOTE_CHARS),
  };
}

/**
 * A request as every face shows it, in order: the kernel's facts, the tool's facts, the body, the
 * quoted text. A preview's parts are checked here (a pack's preview is not typed at run time): a
 * fact or a quote that is not an object with strings is left out.
 */
export function approvalDisplay(r: ApprovalShown): ApprovalDisplay {
  const facts: DisplayFact[] = [{ label: 'caller', value: callerText(r.caller), by: 'kernel' }];
  if (r.external !== undefined)
    facts.push({
      label: 'external write',
      value: visibleLine(
        `the MCP client "${r.external}" asks to change things (external writes are on: memo permissions external-writes); the name is its own claim, not verified; only this one call can be allowed`,
      ),
      by: 'kernel',
    });
  if (r.revision > 1) facts.push({ label: 'revision', value: visibleLine(`${r.revision}${r.editedBy ? `, edited by ${r.editedBy}` : ''}`), by: 'kernel' });
  if (r.editProblem) facts.push({ label: 'edit refused', value: visibleLine(r.editProblem), by: 'kernel' });
  if (r.concern) {
    facts.push({ label: 'concern', value: concernText(r.concern), by: 'kernel' });
    const network = r.concern.network;
    if (network)
      facts.push({
        label: 'network',
        value: visibleLine(`if allowed, to ${network.domains === 'any' ? 'any public address' : network.domains.join(', ')}`),
        by: 'kernel',
      });
  }
  const p = r.preview;
  const parts = <T>(v: unknown, ok: (x: Record<string, unknown>) => boolean): T[] =>
    Array.isArray(v) ? (v.filter((x) => typeof x === 'object' && x !== null && ok(x as Record<string, unknown>)) as T[]) : [];
  for (const f of parts<{ label: string; value: string }>(p?.facts, (x) => typeof x.label === 'string' && typeof x.value === 'string'))
    facts.push({ label: visibleLine(f.label), value: visibleLine(f.value), by: 'tool' });
  const quoted = parts<{ label: string; text: string; from?: unknown }>(p?.quoted, (x) => typeof x.label === 'string' && typeof x.text === 'string').map((q) =>
    quote(q.label, typeof q.from === 'string' && q.from ? q.from : writer(r.caller.kind), q.text),
  );
  const body = p && typeof p.text === 'string' && p.text !== '' ? { kind: p.kind, lines: visibleBody(p.text) } : null;
  return { facts, body, quoted };
}

export interface DisplayLinesOptions {
  /** How many body lines are shown before `… N more lines`. Facts and quotes are never cut by lines. */
  bodyLines: number;
  /** The longest body line shown (cut with …). */
  lineChars?: number;
  /** A label column of this width (`caller:    value`, the body under `preview:`); without it, `label: value` and the body as it is. */
  labelWidth?: number;
  /** Said after `… N more lines` (where the rest can be read). */
  moreHint?: string;
}

/** A display as lines of text, for the terminal faces and `memo approvals list`. */
export function displayLines(d: ApprovalDisplay, o: DisplayLinesOptions): string[] {
  const w = o.labelWidth ?? 0;
  const row = (label: string, value: string) => (w ? `${`${label}:`.padEnd(w - 1)} ${value}` : `${label}: ${value}`);
  const cut = (line: string) => (o.lineChars && line.length > o.lineChars ? `${line.slice(0, o.lineChars - 1)}…` : line);
  const out = d.facts.map((f) => row(f.label, f.value));
  if (d.body) {
    const shown = d.body.lines.slice(0, o.bodyLines).map(cut);
    shown.forEach((l, i) => out.push(w ? (i === 0 ? row('preview', l) : `${' '.repeat(w)}${l}`) : l));
    const left = d.body.lines.length - shown.length;
    if (left > 0) out.push(`${' '.repeat(w)}… ${left} more line${left === 1 ? '' : 's'} of the preview${o.moreHint ?? ''}`);
  }
  for (const q of d.quoted) out.push(row(`${q.label}, written by ${q.from}`, `"${q.text}"${q.more ? ` … (+${q.more} chars)` : ''}`));
  return out;
}
