/** The DI token of the kernel's logger. */
export const Logger = Symbol('Logger');

/** Where the kernel reports what a person running it should know. Never given secrets. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Writes to stderr, so stdout stays clean for `--json` output and the stdio MCP transport. */
export class StderrLogger implements Logger {
  constructor(private readonly quiet = false) {}
  info(message: string): void {
    if (!this.quiet) process.stderr.write(`memo: ${message}\n`);
  }
  warn(message: string): void {
    process.stderr.write(`memo: warning: ${message}\n`);
  }
  error(message: string): void {
    process.stderr.write(`memo: error: ${message}\n`);
  }
}

/** Keeps messages in memory: for tests and for hosts that show them in their own UI. */
export class MemoryLogger implements Logger {
  readonly lines: { level: 'info' | 'warn' | 'error'; message: string }[] = [];
  info(message: string): void {
    this.lines.push({ level: 'info', message });
  }
  warn(message: string): void {
    this.lines.push({ level: 'warn', message });
  }
  error(message: string): void {
    this.lines.push({ level: 'error', message });
  }
}
