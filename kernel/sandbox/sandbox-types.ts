/**
 * What tools see of the sandbox layer: the path sandbox, the command judge, and a concern (a tool's
 * own judgement of one call). Defined here, beside their implementations (path-sandbox.ts,
 * command-judge.ts, command-assessment.ts); the tool contract (kernel/tools/contract.ts) re-exports them.
 */
import type { FileHandle } from 'node:fs/promises';
import type { KernelArea } from './kernel-state.js';
import type { OpenForWriteOptions, PathIntent, ResolvedPath } from './path-sandbox.js';
import type { CommandVerdict, JudgeOptions } from './command-judge.js';

/**
 * Resolves and opens paths inside the sandbox root (the kernel's PathSandbox): every pack that takes
 * a path uses it, so `..`, symlinks, system folders, `.git` and the kernel's own state are refused in
 * one place. Errors are MemoErrors (`PATH_OUTSIDE_ROOT`, `PATH_PROTECTED`, `NOT_FOUND`).
 */
export interface Sandbox {
  readonly root: string;
  /** True when an already-resolved real path lies inside the root (segment-wise). */
  isInside(realPath: string): boolean;
  /** The kernel area (data folder, pack code...) a real path lies in, if any: such paths are not workspace files. */
  kernelArea(realPath: string, access?: 'read' | 'change'): KernelArea | null;
  /**
   * The kernel area a file is another name of (a hard link to a kernel file), from the file's own
   * bigint stats (fstat of what was opened, or lstat), or null. Walkers and bulk readers that open
   * files without `resolve` ask it for every regular file with more than one link; one link costs nothing.
   */
  kernelFile(stats: { dev: bigint; ino: bigint; nlink: bigint; isDirectory(): boolean }): KernelArea | null;
  resolve(requested: string, intent: PathIntent): Promise<ResolvedPath>;
  openForRead(requested: string): Promise<{ handle: FileHandle; resolved: ResolvedPath; size: number }>;
  /**
   * A small regular file read whole, checked as `openForRead` checks it, or null when this route does
   * not apply (bigger than `maxBytes`, not a regular file, missing...): then use `openForRead`.
   */
  readSmallFile?(requested: string, maxBytes: number): { data: Buffer; resolved: ResolvedPath } | null;
  openResolvedForRead(resolved: ResolvedPath): Promise<{ handle: FileHandle; resolved: ResolvedPath; size: number }>;
  openForWrite(requested: string, options?: OpenForWriteOptions): Promise<{ handle: FileHandle; resolved: ResolvedPath; created: boolean }>;
}

/** The command judge (the blacklist), parsed not string-matched: allowed, blocked with a rule, or ask. */
export interface Judge {
  judge(command: string, options?: JudgeOptions): Promise<CommandVerdict>;
}

/**
 * A tool's own judgement of one call, made before the permission gate: what it cannot vouch for.
 * `ask` means the call is always put to a person (never covered by a session or forever approval,
 * denied where nobody can be asked), whatever the tool's danger level.
 */
export interface Concern {
  verdict: 'ask';
  /** A stable id of what was found (e.g. the command judge's `inline-code`). */
  rule: string;
  /** One sentence for the person asked. */
  reason: string;
  /** The network a command gets if the person allows it (the OS sandbox keeps it off otherwise). */
  network?: { domains: 'any' | string[] };
}
