// generated from plugin.json by memo plugins types; do not edit

/** Each tool of this pack, by name: the arguments its handler is given (validated against plugin.json). */
export interface ToolArgs {
  /** Reads a UTF-8 text file inside the workspace. Returns its content, total line count and size in bytes. Files over 1 MB are refused unless you read a slice with offset/limit (the slice itself is capped at 1 MB). Binary files are refused. */
  read_file: {
    /** File path, relative to the workspace root (or absolute inside it). */
    path: string;
    /** First line to return, 1-based. Default 1. */
    offset?: number;
    /** Maximum number of lines to return. Default: all remaining lines. */
    limit?: number;
  };
  /** Creates a file or replaces its whole content. An overwritten file's previous content is kept in <name>.bak. The write is atomic (temporary file in the same folder, flushed to disk, then renamed over the target), so a crash leaves either the old or the new file. Missing parent folders are created only with createDirs: true. */
  write_file: {
    /** File path, relative to the workspace root (or absolute inside it). */
    path: string;
    /** The complete new content of the file (UTF-8). */
    content: string;
    /** Create missing parent folders (inside the workspace only). Default false: a missing folder is an error. */
    createDirs?: boolean;
  };
  /** Edits a text file in one of two ways: exact find-and-replace (oldText -> newText; oldText must occur exactly expectedOccurrences times, default 1, and every occurrence is replaced), or replacing a range of lines (startLine..endLine, 1-based, inclusive) with newText. Returns a unified diff. Keeps <name>.bak and writes atomically. */
  edit_file: {
    /** File path, relative to the workspace root (or absolute inside it). */
    path: string;
    /** Find-and-replace mode: the exact text to find (whitespace and line endings included). Do not combine with startLine/endLine. */
    oldText?: string;
    /** The replacement text (may be empty to delete). */
    newText: string;
    /** Find-and-replace mode: how many times oldText must occur. Default 1. The edit fails, naming the real count, if it differs. */
    expectedOccurrences?: number;
    /** Line-range mode: first line to replace, 1-based. */
    startLine?: number;
    /** Line-range mode: last line to replace, 1-based and inclusive (>= startLine). */
    endLine?: number;
  };
  /** Inserts text as one or more new lines before a 1-based line number of a text file (line = number of lines + 1 appends at the end). Keeps <name>.bak and writes atomically. */
  insert_line: {
    /** File path, relative to the workspace root (or absolute inside it). */
    path: string;
    /** 1-based line number the new text is inserted before; number of lines + 1 appends. */
    line: number;
    /** The text to insert; a line ending is added if it has none. */
    content: string;
  };
  /** Deletes a range of lines (startLine..endLine, 1-based, inclusive) from a text file. Keeps <name>.bak and writes atomically. */
  delete_lines: {
    /** File path, relative to the workspace root (or absolute inside it). */
    path: string;
    /** First line to delete, 1-based. */
    startLine: number;
    /** Last line to delete, 1-based and inclusive (>= startLine). */
    endLine: number;
  };
  /** Deletes a file, a symbolic link (the link itself, never its target) or a directory. A non-empty directory needs recursive: true. The workspace root, .git and anything inside it (or a folder containing a nested .git) are refused. */
  delete_file: {
    /** Path of the file, link or directory, relative to the workspace root (or absolute inside it). */
    path: string;
    /** Required to delete a directory that is not empty, with everything in it. Default false. */
    recursive?: boolean;
  };
  /** Lists a directory inside the workspace: each entry's name, type (file, dir, symlink, other) and size in bytes (files only). At most 1000 entries, sorted by name; the result says truncated and gives the total when there are more. */
  list_directory: {
    /** Directory path, relative to the workspace root (or absolute inside it). Default: the root. */
    path?: string;
    /** Include entries whose name starts with a dot. Default false. */
    showHidden?: boolean;
  };
  /** Describes one path without reading its content: type, size, permission mode (octal), modification time, whether it is a symbolic link, and for a link its target when that target is inside the workspace. */
  get_file_info: {
    /** Path, relative to the workspace root (or absolute inside it). */
    path: string;
  };
  /** Finds files by glob pattern (e.g. "**\/*.ts", "src/*.{js,json}") below the workspace root or a subfolder. Returns workspace-relative paths, sorted. Symbolic links are not followed or returned; .git and node_modules are skipped unless includeIgnored is true. Absolute patterns and ".." segments are refused. */
  search_files: {
    /** Glob pattern relative to the searched folder. */
    pattern: string;
    /** Folder to search in, relative to the workspace root. Default: the root. */
    path?: string;
    /** Let wildcards match names starting with a dot. Default false. */
    dot?: boolean;
    /** Also search inside .git and node_modules folders. Default false. */
    includeIgnored?: boolean;
    /** Maximum number of paths returned (default 200, at most 5000). The result says truncated and gives the total when there are more. */
    maxResults?: number;
  };
  /** Copies the whole project (the workspace root) into another local directory, given as an absolute path outside the project. The target must not exist or be empty, and may not be inside the project, contain it, or be a system directory. node_modules folders are skipped; symbolic links are copied as links only when they point inside the project, others are skipped. Reports files copied, bytes and what was skipped. */
  self_clone: {
    /** Absolute path of the directory to copy into (created if missing; must be empty if it exists). */
    target: string;
  };
}
