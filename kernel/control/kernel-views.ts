/**
 * What `memo plugins list|info` and `memo tools list` print with --json, built from a kernel. The CLI
 * builds them from a kernel of its own and `memo serve` from its running one (control socket), so
 * both ways print the same shapes. `memo approvals list` has only the running one: a kernel of the
 * command's own has nothing pending.
 */
import type { Kernel } from '../kernel.js';
import type { PackManifest } from '../packs/manifest.js';
import type { PendingApproval } from '../permissions/approval-broker.js';
import { approvalDisplay, type ApprovalDisplay } from './preview-format.js';
import type { AccessMode, Concern, Preview } from '../tools/contract.js';
import { offeredIn } from '../tools/access-modes.js';

export interface PackListEntry {
  id: string;
  name: string;
  version: string | null;
  source: string;
  enabled: boolean;
  tools: number;
  status: string;
  error?: string;
  /** The pack runs, but its newer version on disk did not load: why (the previous version keeps running). */
  reloadError?: string;
  dir: string;
}

export interface PackInfo {
  id: string;
  status: string;
  error?: string;
  /** As in PackListEntry: the newer version did not load, and why. */
  reloadError?: string;
  enabled: boolean;
  source: string;
  dir: string;
  manifest: PackManifest | null;
  config: Readonly<Record<string, unknown>> | null;
}

export interface ToolListEntry {
  name: string;
  pack: string;
  danger: string;
  effect: string;
  description: string;
  parameters: unknown;
}

export function packList(kernel: Kernel): PackListEntry[] {
  return kernel.packs.list().map((p) => ({
    id: p.id,
    name: p.manifest?.name ?? p.id,
    version: p.manifest?.version ?? null,
    source: p.source,
    enabled: p.enabled,
    tools: p.manifest?.tools.length ?? 0,
    status: p.status,
    ...(p.error ? { error: p.error } : {}),
    ...(p.reloadError ? { reloadError: p.reloadError } : {}),
    dir: p.dir,
  }));
}

/** Null when there is no such pack. */
export function packInfo(kernel: Kernel, id: string): PackInfo | null {
  const state = kernel.packs.get(id);
  if (!state) return null;
  return {
    id,
    status: state.status,
    ...(state.error ? { error: state.error } : {}),
    ...(state.reloadError ? { reloadError: state.reloadError } : {}),
    enabled: state.enabled,
    source: state.source,
    dir: state.dir,
    manifest: state.manifest ?? null,
    config: kernel.packs.config(id) ?? null,
  };
}

export function toolList(kernel: Kernel): ToolListEntry[] {
  return kernel.registry.list().map((t) => ({
    name: t.spec.name,
    pack: t.pack.id,
    danger: t.spec.danger,
    effect: t.spec.effect,
    description: t.spec.description,
    parameters: t.spec.parameters,
  }));
}

/** A tool as `memo tools search` ranks it (`--json`): what the agent's tool search would offer for the words. */
export interface ToolSearchEntry {
  name: string;
  pack: string;
  score: number;
}

/** Tool search over the enabled tools, or over those an access mode offers. */
export function toolSearchView(kernel: Kernel, query: string, options: { limit?: number; mode?: AccessMode } = {}): ToolSearchEntry[] {
  const mode = options.mode;
  const among = mode
    ? kernel.registry
        .list()
        .filter((t) => offeredIn(t.spec, mode))
        .map((t) => t.spec.name)
    : undefined;
  return kernel.toolSearch.search(query, { limit: options.limit ?? 10, ...(among ? { among } : {}) });
}

/**
 * A request waiting in the approval broker, as `memo approvals list --json` prints it and the
 * `approvals.watch` stream carries it. Arguments are the masked ones the person is shown; the
 * caller's session id and write capability are left out (who calls, not what they hold).
 */
export interface ApprovalView {
  id: string;
  tool: string;
  plugin: string;
  danger: string;
  effect: string;
  caller: { kind: string; id?: string; conversationId?: string };
  args: unknown;
  /** The tool's preview as it made it (its facts, body and quoted text, with the known secrets scrubbed). */
  preview: Preview | null;
  concern?: Concern;
  /** An external MCP client's write (`memo permissions external-writes`): the name the client declares, not verified. */
  external?: string;
  /**
   * The request laid out to be shown (preview-format.ts): the kernel's and the tool's facts, the
   * body, the caller's quoted text, each escaped. The web console renders it; the terminal faces
   * lay out the same from the fields above.
   */
  display: ApprovalDisplay;
  /** When it was asked and when it stops waiting (ISO, by the kernel's clock). */
  askedAt: string;
  expiresAt: string;
  /** The answers that mean something for it (`allow-minutes:N` stands for any N). */
  answers: readonly string[];
  /** `--edit '<json>'` is accepted: the tool declares `editable`. */
  editable: boolean;
  revision: number;
  editedBy?: string;
  editProblem?: string;
  /** The faces it is put to (empty: it waits for `memo approvals answer`, the console or a host). */
  faces: string[];
  /**
   * False for a `memo tools call` made through the control socket: its question goes to the
   * terminal of the command that made it, and only there can it be answered; false too for a
   * request whose instance is gone.
   */
  answerable: boolean;
  /** With a shared database: the instance a request of another instance waits on. */
  instance?: string;
  /** That instance is not answering (stopped, or cut off from the database): listed until it expires, not answerable now. */
  gone?: boolean;
}

/**
 * Why a request of a gone instance cannot be answered: the words of the web console (HTTP 410) and
 * of the shared inbox's refusal (GONE).
 */
export function goneMessage(instance: string | undefined): string {
  return `The instance ${instance ?? ''} that asked this is not answering (stopped, or cut off from the database), so it cannot be answered now; if that instance comes back, the request waits again and can be answered then.`;
}

/** The session id the control server gives each `memo tools call` it runs (see control-server.ts). */
export const CONTROL_CALL_SESSION = 'control:';

export function approvalView(p: PendingApproval): ApprovalView {
  const r = p.request;
  return {
    id: p.id,
    tool: r.tool,
    plugin: r.plugin,
    danger: r.danger,
    effect: r.effect,
    caller: {
      kind: r.caller.kind,
      ...(r.caller.id !== undefined ? { id: r.caller.id } : {}),
      ...(r.caller.conversationId !== undefined ? { conversationId: r.caller.conversationId } : {}),
    },
    args: r.args,
    preview: r.preview,
    ...(r.concern ? { concern: r.concern } : {}),
    ...(r.external !== undefined ? { external: r.external } : {}),
    display: approvalDisplay(r),
    askedAt: new Date(p.since).toISOString(),
    expiresAt: new Date(r.deadline).toISOString(),
    answers: r.answers,
    editable: r.editable,
    revision: r.revision,
    ...(r.editedBy ? { editedBy: r.editedBy } : {}),
    ...(r.editProblem ? { editProblem: r.editProblem } : {}),
    faces: p.faces,
    answerable: !p.gone && !(r.caller.kind === 'cli' && r.caller.sessionId?.startsWith(CONTROL_CALL_SESSION) === true),
    ...(p.instance !== undefined ? { instance: p.instance } : {}),
    ...(p.gone ? { gone: true } : {}),
  };
}

export function approvalList(kernel: Kernel): ApprovalView[] {
  return kernel.approvals.pending().map(approvalView);
}
