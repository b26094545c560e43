/**
 * The built-in `fs-tools` pack: one handler per tool declared in plugin.json. Tools that change
 * files export `{ run, preview }` so a person sees the diff (or what a delete loses) before
 * approving; write_file also `assess`, so a write that cannot run is refused before anyone is
 * asked. Every path goes through `ctx.sandbox`; errors are MemoErrors with the kernel's codes.
 */
import { defineTools, lazyTool, type Preview, type ToolContext, type TypedToolImplementation } from 'memo-kernel/pack';
import { fsFailure } from './common.js';
import { getFileInfoTool, listDirectoryTool } from './list.js';
import { readFileTool } from './read.js';
import type { ToolArgs } from './tool-args.js';

// The reading tools load with the pack (they are the hot path); the rest on their first call (write
// and its diffs, search and its glob library, delete, clone), which keeps them out of start-up time.
const write = () => import('./write.js');

type Fn<A, T> = (args: A, ctx: ToolContext) => T | Promise<T>;

/** The path an error message names: the tool's `path` or `target` argument. */
function pathArgument(args: object): string {
  if ('path' in args && typeof args.path === 'string') return args.path;
  if ('target' in args && typeof args.target === 'string') return args.target;
  return '.';
}

/** Any error that is not already a MemoError becomes one naming the caller's path (never a raw message with real paths). */
function guarded<A extends object, T>(fn: Fn<A, T>): Fn<A, T> {
  return async (args, ctx) => {
    try {
      return await fn(args, ctx);
    } catch (err) {
      throw fsFailure(err, pathArgument(args), 'working on');
    }
  };
}

function tool<A extends object>(impl: Fn<A, unknown> | { run: Fn<A, unknown>; preview: Fn<A, Preview>; assess?: Fn<A, null> }): TypedToolImplementation<A> {
  if (typeof impl === 'function') return guarded(impl);
  return { run: guarded(impl.run), preview: guarded(impl.preview), ...(impl.assess ? { assess: guarded(impl.assess) } : {}) };
}

export const tools = defineTools<ToolArgs>({
  read_file: tool(readFileTool),
  write_file: lazyTool(async () => tool((await write()).writeFileTool)),
  edit_file: lazyTool(async () => tool((await write()).editFileTool)),
  insert_line: lazyTool(async () => tool((await write()).insertLineTool)),
  delete_lines: lazyTool(async () => tool((await write()).deleteLinesTool)),
  delete_file: lazyTool(async () => tool((await import('./delete.js')).deleteFileTool)),
  list_directory: tool(listDirectoryTool),
  get_file_info: tool(getFileInfoTool),
  search_files: lazyTool(async () => tool((await import('./search.js')).searchFilesTool)),
  self_clone: lazyTool(async () => tool((await import('./clone.js')).selfCloneTool)),
});
