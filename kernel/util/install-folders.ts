/**
 * Where this installation's built-in packs and skills sit: beside the kernel's code (`plugins/`,
 * `skills/` in a checkout run from source, under `dist/` once compiled). A module of its own, with
 * nothing but node:path, so `memo serve --stdio` can find a running server's folders before it loads
 * the kernel.
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `kernel/` (or `dist/kernel/`): two levels above this module. */
export const KERNEL_CODE_DIR = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const BUILTIN_PACKS_DIR = path.join(path.dirname(KERNEL_CODE_DIR), 'plugins');
export const BUILTIN_SKILLS_DIR = path.join(path.dirname(KERNEL_CODE_DIR), 'skills');
