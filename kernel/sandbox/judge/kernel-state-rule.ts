/**
 * The `kernel-state` rule: a command whose literal words point into a kernel-owned area (the data
 * folder, pack and skill folders) is refused, whatever the program. The areas hold the audit trail,
 * standing permissions, provider keys and code the kernel loads, so a command that merely names
 * them (`cat data/providers.json`, `cp x data/packs/y/`, `cd data`) is not the tools' business.
 *
 * Words are resolved against the working directories the command may be in; a link pointing in is
 * followed by realpath-ing the longest existing ancestor (only when areas exist, once per word per
 * call). Globs are matched against the areas' names, so `rm -rf *` in the root reaches `data/`.
 * `$PWD`, `~+`, `$(pwd)` and `~-` are resolved like any word (see words.ts).
 *
 * A recursive command over a folder that holds an area (`rm -r .`, `find . -delete`, `grep -r x .`,
 * `tar c .`) reaches the area too (`kernelStateInside`). In the OS sandbox the areas do not exist,
 * so there such a command, and a catch-all glob that only happens to match an area (`rm -rf *`), is
 * not refused: only words that name kernel state are (`rm -r data`, `cat data/permissions.json`).
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { KernelArea } from '../kernel-state.js';
import { found, type Ctx, type Finding } from './context.js';
import { candidates, isCatchAll, START } from './paths.js';
import { code, DYN, type Word } from './words.js';

export const KERNEL_STATE = 'kernel-state';

/** The real path of `p`: the longest existing ancestor resolved, the rest appended. */
function realOf(p: string, cache: Map<string, string>): string {
  const hit = cache.get(p);
  if (hit !== undefined) return hit;
  let head = p;
  const tail: string[] = [];
  let real = p;
  for (;;) {
    try {
      real = path.join(realpathSync.native(head), ...tail);
      break;
    } catch {
      const parent = path.dirname(head);
      if (parent === head) break;
      tail.unshift(path.basename(head));
      head = parent;
    }
  }
  cache.set(p, real);
  return real;
}

/** Turns a glob component into a regular expression over one name. */
export function globRegex(component: string): RegExp {
  let re = '';
  for (let i = 0; i < component.length; i++) {
    const c = component[i]!; // i < component.length
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = component.indexOf(']', i + 2);
      if (end < 0) re += '\\[';
      else {
        re +=
          '[' +
          component
            .slice(i + 1, end)
            .replace(/^!/, '^')
            .replace(/\\/g, '\\\\') +
          ']';
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp('^' + re + '$', 'i');
}

/** The area an absolute path reaches, lexically or through links. */
function areaOf(abs: string, ctx: Ctx, access: 'read' | 'change'): KernelArea | null {
  const state = ctx.run.state!;
  const lexical = path.resolve(abs);
  return state.owner(lexical, access) ?? state.owner(realOf(lexical, ctx.run.real), access);
}

/**
 * The area a glob may expand into: an area whose path matches the pattern's components.
 * `incidental`: the pattern reaches it only by catch-all components (`*`, `.*`) that stop at or
 * above it, as `rm -rf *` does; a pattern aimed at it (`d*`, `da?a`) or going inside it
 * (a `*` followed by `/providers.json`) names it.
 */
function globArea(abs: string, ctx: Ctx, access: 'read' | 'change'): { area: KernelArea; incidental: boolean } | null {
  const parts = abs.split('/').filter(Boolean);
  const first = parts.findIndex((c) => /[*?[]/.test(c));
  if (first < 0) {
    const area = areaOf(abs, ctx, access);
    return area ? { area, incidental: false } : null;
  }
  const dir = '/' + parts.slice(0, first).join('/');
  const components = parts.slice(first);
  const patterns = components.map(globRegex);
  const state = ctx.run.state!;
  const within = state.owner(dir, access);
  if (within) return { area: within, incidental: false };
  const realDir = realOf(dir, ctx.run.real);
  for (const area of state.inside(dir, access).concat(realDir !== dir ? state.inside(realDir, access) : [])) {
    const base = area.dir.startsWith(realDir + '/') ? realDir : dir;
    const names = path.relative(base, area.dir).split('/');
    // The pattern reaches the area if its components match the area's first names (or go past it).
    // slice keeps i < patterns.length
    if (names.slice(0, patterns.length).every((n, i) => patterns[i]!.test(n)))
      return { area, incidental: components.length <= names.length && components.every((c) => !/[*?[]/.test(c) || isCatchAll(c)) };
  }
  return null;
}

/** The values inside a word worth resolving: the word, `--opt=VALUE`, `NAME=VALUE` and its `:` parts. */
function pathsIn(text: string): string[] {
  const out = [text];
  const eq = /^(--?[A-Za-z0-9][\w-]*|[A-Za-z_][A-Za-z0-9_]*|if|of)=(.*)$/s.exec(text);
  if (eq?.[2] !== undefined) out.push(eq[2]);
  // `PATH=data/bin:$PATH`, `--paths=a:data/x`: each part of a colon-separated list (not a URL).
  for (const t of [...out]) if (t.includes(':') && !/^[a-z][a-z0-9+.-]*:\/\//i.test(t)) out.push(...t.split(':'));
  return out.filter((t) => t !== '' && !t.includes(DYN));
}

/**
 * Checks words (and redirect targets, `cd` targets, assigned values) against the kernel's areas.
 * `read` meets the areas closed to every access; `change` (for what a command writes) meets also
 * those closed only to changes, such as the kernel's own plugin folders.
 */
export function kernelStateWords(words: readonly Word[], ctx: Ctx, what: string, access: 'read' | 'change' = 'read'): Finding | null {
  const state = ctx.run.state;
  if (!state || state.areas().length === 0) return null;
  const cwd = ctx.scope.cwd ?? [];
  for (const w of words) {
    if (w.opaque) continue;
    for (const text of pathsIn(w.text)) {
      if (text.startsWith('-') && !text.includes('/')) continue; // a plain option
      const home = process.env.HOME ?? '';
      const expanded = text.startsWith('~/') || text === '~' ? (home ? home + text.slice(1) : null) : text;
      if (expanded === null) continue;
      for (const abs of candidates(
        expanded,
        cwd.filter((d) => d !== START),
      ) ?? []) {
        if (abs.startsWith('~')) continue;
        const hit = w.glob ? globArea(abs, ctx, access) : { area: areaOf(abs, ctx, access), incidental: false };
        // In the OS sandbox a catch-all glob cannot reach an area that is not there.
        const area = hit && !(hit.incidental && ctx.run.osSandbox) ? hit.area : null;
        if (area)
          return found(
            ctx,
            KERNEL_STATE,
            `${what} ${code(w.source)} reaches ${area.label} (${code(area.dir)}), which belongs to the kernel and no tool may touch`,
          );
      }
    }
  }
  return null;
}

/**
 * A directory given to a recursive command (`rm -r`, `find -delete`, `chmod -R`, `grep -r`, `tar c`)
 * that holds an area. Not in the OS sandbox, where the area does not exist.
 */
export function kernelStateInside(words: readonly Word[], ctx: Ctx, what: string): Finding | null {
  const state = ctx.run.state;
  if (!state || state.areas().length === 0 || ctx.run.osSandbox) return null;
  const cwd = (ctx.scope.cwd ?? []).filter((d) => d !== START);
  for (const w of words) {
    if (w.opaque || w.text.includes(DYN) || w.text.startsWith('-')) continue;
    for (const abs of candidates(w.text, cwd) ?? []) {
      if (abs.startsWith('~')) continue;
      const lexical = path.resolve(abs);
      const inside = state.inside(lexical, 'read');
      const real = realOf(lexical, ctx.run.real);
      const area = inside[0] ?? (real !== lexical ? state.inside(real, 'read')[0] : undefined);
      if (area)
        return found(ctx, KERNEL_STATE, `${what} ${code(w.source)} would also reach ${area.label} (${code(area.dir)}) inside it, which belongs to the kernel`);
    }
  }
  return null;
}
