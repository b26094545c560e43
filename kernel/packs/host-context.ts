import { EventEmitter } from 'node:events';
import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';
import type { JsonValue } from '../tools/contract.js';

/**
 * What the host app says about its own state (the note open in the editor, the selected calendar),
 * for packs to read. Plain JSON, set only by the host (`kernel.hostContext.set`); packs read it
 * through `api.host`. A tool never writes it.
 */
export class HostContext {
  private readonly values = new Map<string, JsonValue>();
  private readonly events = new EventEmitter();

  set(key: string, value: JsonValue | undefined): void {
    if (typeof key !== 'string' || !/^[a-zA-Z][\w.-]{0,99}$/.test(key))
      throw new MemoError('VALIDATION', `Host context key "${String(key)}" must be a short name.`);
    if (value === undefined) {
      if (!this.values.delete(key)) return;
    } else {
      // A copy, checked to be JSON: what packs read cannot change under them or hold functions.
      this.values.set(key, JSON.parse(JSON.stringify(value)) as JsonValue);
    }
    this.events.emit('change', key);
  }

  get(key: string): JsonValue | undefined {
    const v = this.values.get(key);
    return v === undefined ? undefined : (JSON.parse(JSON.stringify(v)) as JsonValue);
  }

  keys(): string[] {
    return [...this.values.keys()].sort();
  }

  onChange(listener: (key: string) => void): Disposable {
    this.events.on('change', listener);
    return toDisposable(() => this.events.off('change', listener));
  }
}
