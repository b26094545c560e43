import * as fs from 'node:fs';
import * as path from 'node:path';
import { MemoError } from '../errors.js';
import type { PackManifest, PackPrivilege } from './manifest.js';

function real(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/**
 * Why `pack` does not hold `privilege`, or null when it does. A privilege is granted only to a
 * built-in pack (its folder directly inside the kernel's own pack folder, installed with the kernel)
 * whose manifest declares it. A pack from any other folder (`data/packs`, `--packs`, a host's folder,
 * even one a host loads with `source: 'builtin'`) never holds one, whatever its manifest says, and
 * neither does a pack registered in code: a third-party pack must not be able to answer approvals,
 * change permissions or read a person's conversations.
 */
export function privilegeRefusal(
  pack: { id: string; dir: string | undefined; manifest: PackManifest | undefined },
  privilege: PackPrivilege,
  builtinDir: string,
): string | null {
  const declared = pack.manifest?.privileges?.includes(privilege) === true;
  const builtin = pack.dir !== undefined && real(path.dirname(real(pack.dir))) === real(builtinDir);
  if (declared && builtin) return null;
  if (!builtin)
    return `Pack "${pack.id}" is not one of the kernel's built-in packs${pack.dir ? ` (it was loaded from ${pack.dir})` : ''}, so it is not granted the "${privilege}" privilege, whatever its plugin.json declares: only the built-in packs installed with the kernel are.`;
  return `Pack "${pack.id}" does not declare the "${privilege}" privilege in its plugin.json ("privileges": ["${privilege}"]).`;
}

/** Throws PERMISSION_DENIED saying why when `pack` does not hold `privilege` (see privilegeRefusal). */
export function assertPrivilege(
  pack: { id: string; dir: string | undefined; manifest: PackManifest | undefined },
  privilege: PackPrivilege,
  builtinDir: string,
): void {
  const refusal = privilegeRefusal(pack, privilege, builtinDir);
  if (refusal) throw new MemoError('PERMISSION_DENIED', refusal, { plugin: pack.id });
}
