import { approvalDisplay, displayLines } from '../../kernel/control/preview-format.js';
import type { PermissionRequest } from '../../kernel/permissions/prompter.js';

/** A request's preview as the terminal shows it (facts, body, quoted text: `label: value` lines), uncut. */
export function shownPreview(request: PermissionRequest | undefined): string {
  if (!request) throw new Error('nobody was asked');
  return displayLines(approvalDisplay(request), { bodyLines: Number.POSITIVE_INFINITY }).join('\n');
}
