import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BACKENDS, type BackendId, type BackendSpec } from './backends.js';

/** A successful check is reused this long, so a burst of turns does not re-run it (seed 003). */
export const DETECTION_TTL_MS = 5 * 60_000;
const VERSION_TIMEOUT_MS = 10_000;

export type Detection =
  | { backend: BackendId; label: string; found: true; path: string; version: string; checkedAt: number; cached: boolean }
  | { backend: BackendId; label: string; found: false; reason: string; path?: string; version?: string; checkedAt: number };

/** `1.2.10` > `1.2.9`: numeric parts compared in order. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/** The first `x.y.z` in a `--version` line: `2.1.3 (Claude Code)`, `codex-cli 0.58.0`, `agy 1.2.7`. */
export function parseVersion(output: string): string | null {
  const m = /\b(\d+)\.(\d+)\.(\d+)\b/.exec(output);
  return m ? `${m[1]}.${m[2]}.${m[3]}` : null;
}

/**
 * The PATH of the person's login shell: CLIs installed by shell-managed tools (~/.local/bin, nvm,
 * volta, Homebrew) are found even when Memo was not started from such a shell. Asked once; the
 * markers keep whatever the profile prints out of the answer.
 */
function loginShellPath(env: NodeJS.ProcessEnv): Promise<string[]> {
  const shell = env.SHELL;
  if (!shell || process.platform === 'win32') return Promise.resolve([]);
  return new Promise((resolve) => {
    // Asynchronous: a slow profile never pauses the chat (at most 3 s, then the process PATH alone).
    const child = execFile(
      shell,
      ['-lc', 'printf "\\n__MEMO_PATH__%s__MEMO_PATH__\\n" "$PATH"'],
      { env, timeout: 3_000, maxBuffer: 256 * 1024 },
      (_err, stdout) => {
        const m = /__MEMO_PATH__(.*)__MEMO_PATH__/.exec(String(stdout ?? ''));
        resolve(m?.[1] ? m[1].split(path.delimiter).filter(Boolean) : []);
      },
    );
    child.stdin?.end();
  });
}

/** Where an executable of this name is on these folders, and why not when it is not. */
function which(binary: string, dirs: readonly string[]): string | null {
  for (const dir of dirs) {
    const candidate = path.join(dir, binary);
    try {
      const st = fs.statSync(candidate);
      if (!st.isFile()) continue;
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // Not here, or not executable: the next folder.
    }
  }
  return null;
}

function runVersion(file: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, ['--version'], { env, timeout: VERSION_TIMEOUT_MS, maxBuffer: 64 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`\`${path.basename(file)} --version\` failed: ${(stderr || err.message).toString().trim().slice(0, 200)}`));
      else resolve(`${stdout}\n${stderr}`);
    });
  });
}

export interface CliDetectorOptions {
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  /** Ask the login shell for its PATH (default true). */
  loginShell?: boolean;
}

/**
 * Finds `claude`, `codex` and `agy` on the process's PATH and the login shell's PATH, with their
 * versions. A success is cached for DETECTION_TTL_MS; a failure never is, so installing or
 * upgrading a CLI is picked up by the next check without a restart.
 */
export class CliDetector {
  private readonly cache = new Map<BackendId, Extract<Detection, { found: true }>>();
  private searchPath: Promise<string[]> | null = null;
  private readonly env: NodeJS.ProcessEnv;
  private readonly now: () => number;

  constructor(private readonly options: CliDetectorOptions = {}) {
    this.env = options.env ?? process.env;
    this.now = options.now ?? Date.now;
  }

  /** The process's PATH, then the login shell's (asked once). */
  private async dirs(): Promise<string[]> {
    const own = (this.env.PATH ?? '').split(path.delimiter).filter(Boolean);
    this.searchPath ??= this.options.loginShell === false ? Promise.resolve([]) : loginShellPath(this.env);
    return [...new Set([...own, ...(await this.searchPath)])];
  }

  async detect(id: BackendId): Promise<Detection> {
    const spec: BackendSpec = BACKENDS[id];
    const now = this.now();
    const hit = this.cache.get(id);
    if (hit && now - hit.checkedAt < DETECTION_TTL_MS) return { ...hit, cached: true };
    this.cache.delete(id);
    const base = { backend: id, label: spec.label, checkedAt: now };
    const file = which(spec.binary, await this.dirs());
    if (!file) return { ...base, found: false, reason: `\`${spec.binary}\` is not on PATH (nor on your login shell's PATH)` };
    let output: string;
    try {
      output = await runVersion(file, this.env);
    } catch (err) {
      return { ...base, found: false, path: file, reason: (err as Error).message };
    }
    const version = parseVersion(output);
    if (!version) return { ...base, found: false, path: file, reason: `\`${spec.binary} --version\` printed no version` };
    if (spec.floor && compareVersions(version, spec.floor) < 0)
      return { ...base, found: false, path: file, version, reason: `version ${version} is older than ${spec.floor}: upgrade ${spec.binary}` };
    const found = { ...base, found: true as const, path: file, version, cached: false };
    this.cache.set(id, found);
    return found;
  }

  detectAll(): Promise<Detection[]> {
    return Promise.all((Object.keys(BACKENDS) as BackendId[]).map((id) => this.detect(id)));
  }
}
