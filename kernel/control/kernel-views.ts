/**
 * What `memo plugins list|info` and `memo tools list` print with --json, built from a kernel. The CLI
 * builds them from a kernel of its own and `memo serve` from its running one (control socket), so
 * both ways print the same shapes.
 */
import type { Kernel } from '../kernel.js';
import type { PackManifest } from '../packs/manifest.js';

export interface PackListEntry {
  id: string;
  name: string;
  version: string | null;
  source: string;
  enabled: boolean;
  tools: number;
  status: string;
  error?: string;
  dir: string;
}

export interface PackInfo {
  id: string;
  status: string;
  error?: string;
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
