/**
 * The skill index offered to the model: one line per loaded skill, its name and its description cut
 * to one line. The agent reads a skill's instructions (read_skill) only when the index tells it the
 * skill fits, so the index is what every request pays for, and it stays small.
 */
import type { Skill } from './skill.js';
import { DESCRIPTION_LIMIT } from './skill.js';

/** The default length a description is cut to in the index. */
export const INDEX_DESCRIPTION_CHARS = 200;

/** Whitespace (new lines included) folded to single spaces, cut at a word boundary to `max` characters with "…". */
export function oneLine(text: string, max: number = DESCRIPTION_LIMIT): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, Math.max(1, max - 1));
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).replace(/[\s,;:.-]+$/, '')}…`;
}

export interface SkillIndex {
  /** The index as the model gets it; empty when no skill is loaded. */
  text: string;
  chars: number;
  /** `count(text)`: tokens as the given counter counts them (default: about 3.5 characters a token, as the context budget estimates). */
  tokens: number;
  skills: number;
}

export interface SkillIndexOptions {
  /** Where each description is cut (default 200 characters). */
  descriptionChars?: number;
  /** A token counter (the agent's TokenCounter.count); default ceil(chars / 3.5). */
  count?: (text: string) => number;
}

/**
 * The index of `skills` (a SkillManager's `loaded()`, or anything with one): a header line saying how
 * to use it, then `- name: description` per skill, sorted by name.
 */
export function skillIndex(skills: readonly Skill[] | { loaded(): Skill[] }, options: SkillIndexOptions = {}): SkillIndex {
  const list = [...('loaded' in skills ? skills.loaded() : skills)].sort((a, b) => a.name.localeCompare(b.name));
  const max = options.descriptionChars ?? INDEX_DESCRIPTION_CHARS;
  const text = list.length
    ? `Skills (call read_skill with a name to read its instructions before following it):\n${list.map((s) => `- ${s.name}: ${oneLine(s.description, max)}`).join('\n')}\n`
    : '';
  const count = options.count ?? ((t: string) => Math.ceil(t.length / 3.5));
  return { text, chars: text.length, tokens: text ? count(text) : 0, skills: list.length };
}
