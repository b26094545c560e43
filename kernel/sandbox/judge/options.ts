/**
 * Option parsing for wrappers and programs: getopt-style short clusters and GNU long options with
 * unique-prefix abbreviation, the way the programs themselves read them. An option the spec does
 * not know is reported, not skipped: the caller fails closed, since it might take the command as
 * its value or run one.
 */
import { DYN, type Word } from './words.js';

export interface OptSpec {
  /** Short options, getopt style: `n:` takes a value, `e::` an optional attached one. */
  short?: string;
  /** Long options: `name`, `name=` (takes a value), `name=?` (optional `=value`). */
  long?: readonly string[];
  /** `su -` : a lone dash is an option. */
  dashIsOption?: boolean;
  /** Options may follow operands (GNU permutation); only used by programs, never by wrappers. */
  permute?: boolean;
}

export type Parsed = { options: Map<string, string | true>; all: Array<[string, string | true]>; operands: Word[] } | { unknown: Word };

/** Parses leading options, stopping at `--` or the first operand (the command a wrapper runs). */
export function getopt(args: Word[], spec: OptSpec): Parsed {
  const options = new Map<string, string | true>();
  const all: Array<[string, string | true]> = [];
  const operands: Word[] = [];
  const set = (k: string, v: string | true): void => {
    options.set(k, v);
    all.push([k, v]);
  };
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    if (w.opaque) return { unknown: w };
    if (t === '--') {
      i++;
      break;
    }
    if (t === '-' && spec.dashIsOption) continue;
    if (!t.startsWith('-') || t === '-') {
      if (spec.permute) {
        operands.push(w);
        continue;
      }
      break;
    }
    if (t.includes(DYN)) return { unknown: w };
    if (t.startsWith('--')) {
      const r = longOption(args, i, spec);
      if ('unknown' in r) return r;
      set(r.name, r.value);
      i = r.next;
      continue;
    }
    const r = shortCluster(args, i, spec);
    if ('unknown' in r) return r;
    r.found.forEach(([k, v]) => set(k, v));
    i = r.next;
  }
  return { options, all, operands: [...operands, ...args.slice(i)] };
}

function longOption(args: Word[], i: number, spec: OptSpec): { name: string; value: string | true; next: number } | { unknown: Word } {
  const w = args[i]!; // callers pass an index inside args
  const eq = w.text.indexOf('=');
  const given = w.text.slice(2, eq < 0 ? undefined : eq);
  const defs = (spec.long ?? []).map((d) => ({ name: d.replace(/=\??$/, ''), kind: d.endsWith('=?') ? 'optional' : d.endsWith('=') ? 'value' : 'flag' }));
  const exact = defs.find((d) => d.name === given);
  const prefixed = defs.filter((d) => d.name.startsWith(given));
  const def = exact ?? (given !== '' && prefixed.length === 1 ? prefixed[0] : undefined);
  if (!def) return { unknown: w };
  if (eq >= 0) return def.kind === 'flag' ? { unknown: w } : { name: def.name, value: w.text.slice(eq + 1), next: i };
  if (def.kind !== 'value') return { name: def.name, value: true, next: i };
  const v = args[i + 1];
  return v && !v.opaque ? { name: def.name, value: v.text, next: i + 1 } : { unknown: v ?? w };
}

function shortCluster(args: Word[], i: number, spec: OptSpec): { found: Array<[string, string | true]>; next: number } | { unknown: Word } {
  const w = args[i]!; // callers pass an index inside args
  const shortSpec = spec.short ?? '';
  const out: Array<[string, string | true]> = [];
  for (let j = 1; j < w.text.length; j++) {
    const letter = w.text[j]!; // j < w.text.length
    const at = shortSpec.indexOf(letter);
    if (at < 0 || letter === ':') return { unknown: w };
    const takesValue = shortSpec[at + 1] === ':';
    if (!takesValue) {
      out.push([letter, true]);
      continue;
    }
    const optional = shortSpec[at + 2] === ':';
    const attached = w.text.slice(j + 1);
    if (attached !== '' || optional) {
      out.push([letter, attached || true]);
      return { found: out, next: i };
    }
    const v = args[i + 1];
    if (!v || v.opaque) return { unknown: v ?? w };
    out.push([letter, v.text]);
    return { found: out, next: i + 1 };
  }
  return { found: out, next: i };
}
