import * as fs from 'node:fs';
import * as path from 'node:path';

/** The admin lines of a data folder's audit file, as `action target by face` (target `-` when none). */
export function adminActions(dataDir: string): string[] {
  const file = path.join(dataDir, 'agent-audit.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.event === 'admin')
    .map((l) => `${String(l.action)} ${typeof l.target === 'string' ? l.target : '-'} by ${String(l.by)}`);
}
