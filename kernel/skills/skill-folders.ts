/**
 * Opt-in skill folders: folders where people already keep skills (a project's `.claude/skills`, a
 * user's `~/.claude/skills`), loaded besides `skills/` and `data/skills` only once a person names
 * them (`memo skills folders add <dir>`); nothing is ever scanned by default. They are stored in
 * `data/skill-folders.json` (the data folder's, so no tool can add one), and each becomes kernel
 * state when it loads, like every skill folder: no tool may read, list or change it.
 */
import * as path from 'node:path';
import { StderrLogger, type Logger } from '../logger.js';
import { JsonFileStore } from '../util/json-file-store.js';

interface FolderSettings {
  /** Absolute paths, in the order they were added (an earlier folder wins a name clash). */
  folders: string[];
}

export function skillFoldersStore(dataDir: string, logger: Logger = new StderrLogger()): JsonFileStore<FolderSettings> {
  return new JsonFileStore<FolderSettings>({
    file: path.join(dataDir, 'skill-folders.json'),
    logger,
    empty: () => ({ folders: [] }),
    parse: (json) => {
      const folders = (json as { folders?: unknown } | null)?.folders;
      if (!Array.isArray(folders) || !folders.every((f) => typeof f === 'string' && path.isAbsolute(f)))
        throw new Error('is not {"folders": [absolute paths]}');
      return { folders: [...new Set(folders as string[])] };
    },
    whileUnusable: 'no opt-in skill folder is loaded',
  });
}

/** The opt-in folders stored for this data folder (none when the file is missing or unusable). */
export function optInSkillFolders(dataDir: string): string[] {
  return skillFoldersStore(dataDir).read().folders;
}
