import { MemoError } from '../errors.js';
import type { AgentKernel as Kernel } from './agent-kernel.js';
import { PathSandbox } from '../sandbox/path-sandbox.js';

/** The largest file one attachment may be; the model's window is the tighter limit (the loop's budget counts the text). */
export const MAX_ATTACHMENT_BYTES = 256 * 1024;

export interface Attachment {
  /** The path relative to the workspace root, as the sandbox resolved it. */
  path: string;
  text: string;
}

/**
 * Reads a file the person attaches to a turn through the same sandbox as the tools: inside the
 * workspace root, never the kernel's own folders (data, packs, skills), no `..`, no link out.
 * Only text: the content goes into the person's message, where the turn's budget counts it.
 */
export async function readAttachment(kernel: Kernel, requested: string): Promise<Attachment> {
  const sandbox = new PathSandbox(kernel.config.root, kernel.state);
  const { handle, resolved, size } = await sandbox.openForRead(requested);
  try {
    if (size > MAX_ATTACHMENT_BYTES) {
      throw new MemoError('VALIDATION', `${requested} is ${Math.ceil(size / 1024)} KB; an attachment may be at most ${MAX_ATTACHMENT_BYTES / 1024} KB.`);
    }
    const bytes = await handle.readFile();
    if (bytes.includes(0)) throw new MemoError('VALIDATION', `${requested} is not a text file; only text can be attached.`);
    return { path: resolved.relative, text: bytes.toString('utf8') };
  } finally {
    await handle.close();
  }
}

/** The person's message with its attachments after it, each fenced and named, so the model can tell them apart. */
export function withAttachments(message: string, attachments: readonly Attachment[]): string {
  if (attachments.length === 0) return message;
  const parts = attachments.map((a) => {
    const fence = a.text.includes('```') ? '~~~~' : '```';
    return `Attached file ${a.path}:\n${fence}\n${a.text}${a.text.endsWith('\n') ? '' : '\n'}${fence}`;
  });
  return `${message}\n\n${parts.join('\n\n')}`;
}
