/**
 * What a skill's `allowed-tools` allows, as data (allowed-tools.ts maps the entries). A module of its
 * own, without the parser's types: `Skill` (public, in memo-kernel's .d.ts) carries an Allowance, and
 * a host app's type check must not need web-tree-sitter's (which expect Emscripten's global types).
 */

/** A command `Bash(...)` allows: these words first, and nothing after them when `exact`. */
export interface CommandPattern {
  words: string[];
  exact: boolean;
  written: string;
}

export interface Allowance {
  /** The entries as written, for messages. */
  written: string[];
  /** Tools allowed whatever their arguments. */
  tools: Set<string>;
  /** `run_command`: any command, only these patterns, or none (not listed). */
  commands: 'any' | CommandPattern[];
  /** What could not be mapped or is not enforced, one sentence each (load-time warnings). */
  warnings: string[];
}
