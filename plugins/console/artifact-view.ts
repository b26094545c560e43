/**
 * An HTML artifact a note embeds (`![[name.html]]`, vault_add_html_artifact's file block), served to
 * the console's sandboxed frame. Seed 003: scripts run and https: resources load, but the page cannot
 * read the vault or the app. The file is read through the pipeline like every other read of the
 * console (vault_read_note finds the note and proves the embed, fs-tools' read_file reads the file
 * beside it), and served with a CSP whose `sandbox` gives it an opaque origin wherever it is opened:
 * no cookie of the console's, no request to its API that carries the session, no reach into the
 * page around it.
 */
import * as path from 'node:path';
import type { PackAdministration } from 'memo-kernel/pack';
import { obj } from './item-view.js';

/** What a note's artifact may be called: one file name ending .html, beside the note. */
const NAME = /^[^/\\\n\0]{1,200}\.html$/i;

/** The artifact's own headers: a sandboxed document of an opaque origin, framed only by the console. */
export const ARTIFACT_HEADERS: Record<string, string> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': [
    'sandbox allow-scripts',
    "default-src 'none'",
    "script-src 'unsafe-inline' https:",
    "style-src 'unsafe-inline' https:",
    'img-src https: data: blob:',
    'font-src https: data:',
    'media-src https: data: blob:',
    'connect-src https:',
    "form-action 'none'",
    "base-uri 'none'",
    "frame-ancestors 'self'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

export type ArtifactAnswer = { html: string } | { status: number; code: string; message: string };

export async function readArtifact(admin: PackAdministration, note: string, name: string, signal: AbortSignal): Promise<ArtifactAnswer> {
  if (!note || note.length > 500) return { status: 400, code: 'VALIDATION', message: 'Name the note (its id or path) that embeds the artifact.' };
  if (!NAME.test(name)) return { status: 400, code: 'VALIDATION', message: 'An artifact is one .html file beside its note.' };
  const read = await admin.invoke('vault_read_note', { note }, signal);
  if (!read.ok) return { status: read.error.code === 'NOT_FOUND' ? 404 : 409, code: read.error.code, message: read.error.message };
  const v = obj(read.value);
  const content = typeof v.content === 'string' ? v.content : '';
  // Only what the note embeds is served: a name it does not embed is not an artifact of it.
  if (!content.includes(`![[${name}]]`)) return { status: 404, code: 'NOT_FOUND', message: `The note does not embed ${name}.` };
  const folder = admin.packs.config('vault')?.folder;
  const vaultFolder = typeof folder === 'string' && folder.trim() ? folder : 'vault';
  const notePath = typeof v.path === 'string' ? v.path : '';
  const file = path.posix.join(vaultFolder, path.posix.dirname(notePath), name);
  const r = await admin.invoke('read_file', { path: file }, signal);
  if (!r.ok)
    return r.error.code === 'UNKNOWN_TOOL' || r.error.code === 'TOOL_DISABLED'
      ? { status: 409, code: r.error.code, message: `Showing an artifact reads its file with fs-tools' read_file, which is not available: ${r.error.message}` }
      : { status: r.error.code === 'NOT_FOUND' ? 404 : 409, code: r.error.code, message: r.error.message };
  const html = obj(r.value).content;
  return typeof html === 'string' ? { html } : { status: 409, code: 'TOOL_FAILED', message: 'read_file gave no text for the artifact.' };
}
