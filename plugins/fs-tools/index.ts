/**
 * The built-in `fs-tools` pack: one handler per tool declared in plugin.json. Tools that change
 * files export `{ run, preview }` so a person sees the diff (or what a delete loses) before
 * approving. Every path goes through `ctx.sandbox`; errors are MemoErrors with the kernel's codes.
 */
import type { Preview, ToolContext, ToolImplementation } from 'memo-kernel/pack';
import { fsFailure } from './common.js';
import { selfCloneTool } from './clone.js';
import { deleteFileTool } from './delete.js';
import { getFileInfoTool, listDirectoryTool } from './list.js';
import { readFileTool } from './read.js';
import { searchFilesTool } from './search.js';
import { deleteLinesTool, editFileTool, insertLineTool, writeFileTool } from './write.js';

type Fn<T> = (args: Record<string, unknown>, ctx: ToolContext) => T | Promise<T>;

/** Any error that is not already a MemoError becomes one naming the caller's path (never a raw message with real paths). */
function guarded<T>(fn: Fn<T>): Fn<T> {
  return async (args, ctx) => {
    try {
      return await fn(args, ctx);
    } catch (err) {
      const shownPath = typeof args.path === 'string' ? args.path : typeof args.target === 'string' ? args.target : '.';
      throw fsFailure(err, shownPath, 'working on');
    }
  };
}

function tool(impl: Fn<unknown> | { run: Fn<unknown>; preview: Fn<Preview> }): ToolImplementation {
  return typeof impl === 'function' ? guarded(impl) : { run: guarded(impl.run), preview: guarded(impl.preview) };
}

export const tools: Record<string, ToolImplementation> = {
  read_file: tool(readFileTool),
  write_file: tool(writeFileTool),
  edit_file: tool(editFileTool),
  insert_line: tool(insertLineTool),
  delete_lines: tool(deleteLinesTool),
  delete_file: tool(deleteFileTool),
  list_directory: tool(listDirectoryTool),
  get_file_info: tool(getFileInfoTool),
  search_files: tool(searchFilesTool),
  self_clone: tool(selfCloneTool),
};
