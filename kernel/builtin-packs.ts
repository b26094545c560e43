/**
 * The ids of the packs that ship with Memo (`plugins/<id>/plugin.json`), as a type: what
 * `kernel.loadPacks([...])` takes by id, so a typo is a compile error in a TypeScript host. Folder packs
 * keep any id (`{ dir, source, only: ['my-pack'] }`). test/kernel/builtin-pack-ids.test.ts checks the
 * list against the folders.
 */
export const BUILTIN_PACK_IDS = ['calendar', 'canvas', 'console', 'fs-tools', 'providers', 'routines', 'shell', 'vault', 'web-search', 'whatsapp'] as const;

/** A built-in pack's id. */
export type BuiltinPackId = (typeof BUILTIN_PACK_IDS)[number];
