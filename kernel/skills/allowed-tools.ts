/**
 * A skill's `allowed-tools`, read as a restriction: while an agent turn works under the skill, only
 * these tools may be called. The Agent Skills spec calls them "pre-approved"; here a skill never
 * skips the prompt, so the list can only take tools away, never grant anything.
 *
 * Public skills name Claude Code's tools (`Read`, `Edit`, `Bash(git:*)`...); each is mapped to this
 * project's tools, and a `Bash(...)` pattern to command prefixes checked on the parsed command
 * `run_command` would run (tree-sitter's bash grammar, the command judge's word resolution), never
 * on its text. What cannot be mapped or checked grants nothing: the restriction fails closed.
 */
import type { Node, Parser } from 'web-tree-sitter';
import { isLiteral, wordsOf } from '../sandbox/judge/words.js';
import type { Allowance, CommandPattern } from './allowance.js';

export type { CommandPattern } from './allowance.js';

/** Claude Code's tool names and the tools of this project each one stands for. */
export const PUBLIC_TOOL_NAMES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  Read: ['read_file', 'get_file_info'],
  Write: ['write_file'],
  Edit: ['edit_file', 'insert_line', 'delete_lines'],
  MultiEdit: ['edit_file', 'insert_line', 'delete_lines'],
  Grep: ['search_files', 'read_file'],
  Glob: ['search_files', 'list_directory'],
  LS: ['list_directory', 'get_file_info'],
  Bash: ['run_command'],
  WebSearch: ['web_search'],
});

/** Public names with no counterpart here: accepted, warned about, granting nothing. */
const NO_COUNTERPART = new Set(['WebFetch', 'NotebookEdit', 'NotebookRead', 'Task', 'TodoWrite', 'Agent', 'KillShell', 'BashOutput', 'SlashCommand', 'Skill']);

/** The tools every skill allows: reading skills is how the agent learns what it may do. */
export const ALWAYS_ALLOWED: readonly string[] = ['list_skills', 'read_skill'];

/**
 * Splits `Read, Grep Bash(git diff:*)` (or a YAML list of such) into entries: spaces and commas
 * separate entries except inside parentheses.
 */
export function splitAllowedTools(value: string | readonly string[]): string[] {
  const out: string[] = [];
  for (const item of typeof value === 'string' ? [value] : value) {
    let depth = 0;
    let current = '';
    for (const c of item) {
      if (c === '(') depth++;
      if (c === ')') depth = Math.max(0, depth - 1);
      if (depth === 0 && (c === ',' || /\s/.test(c))) {
        if (current) out.push(current);
        current = '';
      } else current += c;
    }
    if (current) out.push(current);
  }
  return out;
}

const OWN_TOOL_NAME = /^[a-z][a-z0-9_]*$/;

/** A `Bash(...)` pattern: `git:*`, `git diff *` (prefixes), `git status` (exact), `*` (any). */
function bashPattern(spec: string, written: string): CommandPattern | 'any' | { unsupported: string } {
  const s = spec.trim();
  if (s === '' || s === '*') return 'any';
  let body = s;
  let exact = true;
  if (body.endsWith(':*')) {
    body = body.slice(0, -2);
    exact = false;
  } else if (/\s\*$/.test(body)) {
    body = body.slice(0, -1);
    exact = false;
  }
  const words = body.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return 'any';
  if (words.some((w) => /[*?[\]'"\\$`]/.test(w)))
    return {
      unsupported: `${written}: only "prefix:*", "prefix *" and an exact command are understood here (no wildcards inside words, no quotes), so it allows no command`,
    };
  return { words, exact, written };
}

/**
 * Maps the entries to this project's tools. `known(name)` says whether a tool of that name exists
 * now (an own-name entry naming none is warned about; it may come with a pack loaded later).
 */
export function mapAllowedTools(entries: readonly string[], known: (tool: string) => boolean = () => true): Allowance {
  const a: Allowance = { written: [...entries], tools: new Set(), commands: [], warnings: [] };
  const addCommands = (p: CommandPattern | 'any') => {
    if (p === 'any') a.commands = 'any';
    else if (a.commands !== 'any') a.commands.push(p);
  };
  for (const entry of entries) {
    const m = /^([A-Za-z][A-Za-z0-9_-]*)(?:\((.*)\))?$/s.exec(entry);
    if (!m) {
      a.warnings.push(`allowed-tools entry "${entry}" is not a tool name or Name(pattern), so it allows nothing`);
      continue;
    }
    const name = m[1]!;
    const spec = m[2];
    if (name === 'Bash') {
      const p = bashPattern(spec ?? '', entry);
      if (typeof p === 'object' && 'unsupported' in p) a.warnings.push(`allowed-tools entry ${p.unsupported}`);
      else addCommands(p);
      continue;
    }
    const mapped = PUBLIC_TOOL_NAMES[name];
    if (mapped) {
      if (spec !== undefined && !['*', '**', ''].includes(spec.trim())) {
        a.warnings.push(`allowed-tools entry "${entry}": path patterns are not enforced here, so it allows nothing (write "${name}" for the whole tool)`);
        continue;
      }
      for (const t of mapped) a.tools.add(t);
      continue;
    }
    if (NO_COUNTERPART.has(name)) {
      a.warnings.push(`allowed-tools entry "${entry}" has no counterpart in this project, so it allows nothing`);
      continue;
    }
    const mcp = /^mcp__[A-Za-z0-9_-]+?__([a-z][a-z0-9_]*)$/.exec(name);
    const own = mcp ? mcp[1]! : spec === undefined && OWN_TOOL_NAME.test(name) ? name : null;
    if (own === null) {
      a.warnings.push(`allowed-tools entry "${entry}" is not a tool known here (see the mapping in the README), so it allows nothing`);
      continue;
    }
    if (own === 'run_command') addCommands('any');
    else a.tools.add(own);
    if (!known(own)) a.warnings.push(`allowed-tools entry "${entry}" names the tool "${own}", which no loaded pack provides`);
  }
  return a;
}

/** Node types a command may hold and still be matched: plain words, quoted strings, numbers. */
const PLAIN = new Set(['command_name', 'word', 'string', 'raw_string', 'string_content', 'ansi_c_string', 'number', 'concatenation']);
/** Node types that only join commands (`a && b`, `a | b`, `a; b`): each command is checked. */
const JOINERS = new Set(['program', 'list', 'pipeline']);

function plainThroughout(node: Node): boolean {
  if (!PLAIN.has(node.type)) return false;
  return node.namedChildren.every((c) => c !== null && plainThroughout(c));
}

/**
 * Whether every command in `command` starts with one of `patterns` (and is exactly it for an exact
 * one). Null when it does; otherwise the sentence saying why not. Only plain commands joined by
 * `&&`, `||`, `;` and `|` are understood; substitutions, variables, redirects, subshells, functions
 * and anything the parser does not read cleanly are refused.
 */
export function commandOutside(parser: Parser, command: string, patterns: readonly CommandPattern[]): string | null {
  const tree = parser.parse(command);
  if (!tree) return 'the shell parser produced no tree for it';
  try {
    if (tree.rootNode.hasError) return 'it is not complete, valid shell';
    const commands: Node[] = [];
    const pending: Node[] = [tree.rootNode];
    while (pending.length) {
      const node = pending.pop()!;
      if (node.type === 'command') commands.push(node);
      else if (JOINERS.has(node.type)) pending.push(...node.namedChildren.filter((c): c is Node => c !== null && c.type !== 'comment'));
      else return `it holds ${node.type.replace(/_/g, ' ')} (only plain commands joined by &&, ||, ; and | are checked against allowed-tools)`;
    }
    if (commands.length === 0) return 'it holds no command';
    for (const cmd of commands) {
      const name = cmd.childForFieldName('name');
      const args = cmd.childrenForFieldName('argument');
      const plain = cmd.namedChildren.every((c) => c !== null && plainThroughout(c)) && args.every((a) => a.isNamed);
      if (!plain || name?.namedChildCount !== 1)
        return `"${cmd.text}" uses expansions, assignments or redirects, which allowed-tools patterns cannot vouch for`;
      const words = [...wordsOf(name.namedChild(0)!), ...args.flatMap((a) => wordsOf(a))];
      if (!words.every(isLiteral)) return `"${cmd.text}" has words only known at run time`;
      const texts = words.map((w) => w.text);
      const fits = patterns.some(
        (p) => p.words.every((w, i) => texts[i] === w) && (p.exact ? texts.length === p.words.length : texts.length >= p.words.length),
      );
      if (!fits) return `"${cmd.text}" matches none of ${patterns.map((p) => p.written).join(', ') || 'its Bash patterns (there are none)'}`;
    }
    return null;
  } finally {
    tree.delete();
  }
}
