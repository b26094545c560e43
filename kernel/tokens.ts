/**
 * DI tokens for the kernel's interface-typed dependencies: one Symbol with a same-named
 * interface. Concrete services (ToolRegistry, AuditLog, ...) are their own tokens.
 */
import type { Clock as ClockShape } from './clock.js';
import type { Logger as LoggerShape } from './logger.js';
import type { Prompter as PrompterShape } from './permissions/prompter.js';

export const Clock = Symbol('Clock');
export type Clock = ClockShape;

export const Logger = Symbol('Logger');
export type Logger = LoggerShape;

export const Prompter = Symbol('Prompter');
export type Prompter = PrompterShape;

/** The resolved, validated options of one kernel instance. */
export const KernelConfig = Symbol('KernelConfig');
export interface KernelConfig {
  root: string;
  dataDir: string;
  promptTimeoutMs: number;
  defaultToolTimeoutMs: number;
}
