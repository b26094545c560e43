// generated from plugin.json by memo plugins types; do not edit

/** Each tool of this pack, by name: the arguments its handler is given (validated against plugin.json). */
export interface ToolArgs {
  /** Executes a terminal command (bash) in an OS sandbox and returns its exit code, stdout and stderr. Runs in the project root unless cwd is given; only the project root and a private /tmp are writable, and there is no network unless the person approving allows it (curl, git fetch, npm install ask). 60 s timeout; long output is cut in the middle. Destructive, privilege-escalating and system-control commands are refused whatever the permissions. */
  run_command: {
    /** The shell command to execute */
    command: string;
    /** Working directory (defaults to the project root) */
    cwd?: string;
  };
  /** List environment variables of the agent's process. Values of sensitive-looking variables (keys, tokens, passwords...) are masked. */
  read_env: {
    /** Only variables whose name starts with this (case-sensitive) */
    prefix?: string;
    /** Only these variables */
    names?: string[];
  };
}
