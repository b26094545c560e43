/**
 * The access modes of `memo chat` (issue 39): which tools a turn may use. `--mode vault|computer|web`
 * (`--web` is `--mode web`) picks the first turns' mode, `/vault`, `/computer` and `/web` switch the
 * next turns' for every provider, `/agent` goes back to the stored default (ProviderSettings, beside
 * the active provider; `--mode M --save-default` stores it).
 */
import type { Kernel } from '../kernel.js';
import { offeredIn } from '../tools/access-modes.js';
import type { AccessMode } from '../tools/contract.js';
import { isAccessMode } from '../state/kernel-state-tables.js';

export { isAccessMode };

/** What a mode is called in the transcript. */
export const MODE_NAMES: Record<AccessMode, string> = { vault: 'Vault only', computer: 'Computer access', web: 'Web search only' };

/** The slash commands that switch the mode: the mode they choose, `default` for `/agent`. */
export function modeCommand(text: string): AccessMode | 'default' | undefined {
  if (text === '/vault' || text === '/computer' || text === '/web') return text.slice(1) as AccessMode;
  return text === '/agent' ? 'default' : undefined;
}

/** The names of the enabled tools a turn in `mode` is offered (none when the chat has no tools). */
export function modeTools(kernel: Kernel, mode: AccessMode, toolsEnabled: boolean): string[] {
  if (!toolsEnabled) return [];
  return kernel.registry
    .list()
    .filter((t) => offeredIn(t.spec, mode))
    .map((t) => t.spec.name);
}

/** `Vault only · 23 tools`, as the header, `/tools` and a switch say it. */
export function modeLine(kernel: Kernel, mode: AccessMode, toolsEnabled: boolean): string {
  if (!toolsEnabled) return `${MODE_NAMES[mode]} · no tools`;
  const n = modeTools(kernel, mode, true).length;
  return `${MODE_NAMES[mode]} · ${n} tool${n === 1 ? '' : 's'}`;
}
