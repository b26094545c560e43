import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ToolResult } from '../tools/contract.js';

/**
 * A long-running part of a pack (a scheduler, a socket, a sync loop) that `memo serve` or a host's
 * `kernel.start()` starts and `shutdown()` stops. One registered while services run (a pack loaded
 * or reloaded later) starts at once; one whose pack unloads or reloads is stopped first.
 */
export interface PackService {
  /** kebab-case, unique within the pack. */
  name: string;
  /** May return once running (keep the work going on timers or sockets) or run until `ctx.signal` aborts. */
  start(ctx: ServiceContext): void | Promise<void>;
  /** Releases everything start() opened. Called once, also after a failed start. */
  stop?(): void | Promise<void>;
}

export interface ServiceContext {
  /** Aborted when the service is being stopped. */
  signal: AbortSignal;
  logger: Logger;
  /** Calls a tool through the kernel's one pipeline as this service (caller kind `host`, id `<pack>/<service>`). */
  invoke(tool: string, args: Record<string, unknown>): Promise<ToolResult>;
}

export type ServiceState = 'stopped' | 'starting' | 'running' | 'failed' | 'stopping';

export interface ServiceStatus {
  pack: string;
  name: string;
  state: ServiceState;
  /** Why it failed (start threw or rejected). */
  error?: string;
}

interface Entry {
  pack: string;
  service: PackService;
  state: ServiceState;
  error?: string;
  controller?: AbortController;
  /** Settles when start() has settled (so stop() never races a half-started service). */
  starting?: Promise<void>;
}

type Invoker = (pack: string, service: string, tool: string, args: Record<string, unknown>) => Promise<ToolResult>;

/** Every pack service; started and stopped as one with the kernel's lifecycle. */
export class PackServices {
  private readonly entries = new Map<string, Entry>();
  private running = false;

  constructor(
    private readonly logger: Logger,
    private readonly invoke: Invoker,
  ) {}

  register(pack: string, service: PackService): Disposable {
    if (!service || typeof service.name !== 'string' || !/^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/.test(service.name))
      throw new MemoError('VALIDATION', `A service of pack "${pack}" needs a kebab-case name.`, { plugin: pack });
    if (typeof service.start !== 'function')
      throw new MemoError('VALIDATION', `Service "${service.name}" of pack "${pack}" has no start function.`, { plugin: pack });
    const key = `${pack}/${service.name}`;
    if (this.entries.has(key)) throw new MemoError('CONFLICT', `Pack "${pack}" registers the service "${service.name}" twice.`, { plugin: pack });
    const entry: Entry = { pack, service, state: 'stopped' };
    this.entries.set(key, entry);
    if (this.running) void this.startOne(entry);
    return toDisposable(() => {
      if (this.entries.get(key) !== entry) return;
      this.entries.delete(key);
      void this.stopOne(entry);
    });
  }

  /** Starts every registered service; later registrations start as they come. A failing one is reported, the others run. */
  async start(): Promise<void> {
    this.running = true;
    await Promise.all([...this.entries.values()].filter((e) => e.state === 'stopped').map((e) => this.startOne(e)));
  }

  /** Stops every service (in reverse order of registration). */
  async stop(): Promise<void> {
    this.running = false;
    for (const e of [...this.entries.values()].reverse()) await this.stopOne(e);
  }

  list(): ServiceStatus[] {
    return [...this.entries.values()].map((e) => ({ pack: e.pack, name: e.service.name, state: e.state, ...(e.error ? { error: e.error } : {}) }));
  }

  get isRunning(): boolean {
    return this.running;
  }

  private startOne(entry: Entry): Promise<void> {
    const controller = new AbortController();
    entry.controller = controller;
    entry.state = 'starting';
    delete entry.error;
    const label = `${entry.pack}/${entry.service.name}`;
    const ctx: ServiceContext = {
      signal: controller.signal,
      logger: this.logger,
      invoke: (tool, args) => this.invoke(entry.pack, entry.service.name, tool, args),
    };
    entry.starting = (async () => {
      try {
        await entry.service.start(ctx);
        if (entry.state === 'starting') {
          entry.state = 'running';
          this.logger.info(`service ${label} started`);
        }
      } catch (err) {
        entry.state = 'failed';
        entry.error = (err as Error)?.message ?? String(err);
        this.logger.warn(`service ${label} failed to start: ${entry.error}`);
      }
    })();
    return entry.starting;
  }

  private async stopOne(entry: Entry): Promise<void> {
    if (entry.state === 'stopped' || entry.state === 'stopping') return;
    const wasFailed = entry.state === 'failed';
    entry.controller?.abort(new Error('the service is stopping'));
    entry.state = 'stopping';
    await entry.starting;
    try {
      await entry.service.stop?.();
    } catch (err) {
      this.logger.warn(`service ${entry.pack}/${entry.service.name} failed to stop cleanly: ${(err as Error)?.message ?? String(err)}`);
    }
    entry.state = 'stopped';
    if (!wasFailed) this.logger.info(`service ${entry.pack}/${entry.service.name} stopped`);
  }
}
