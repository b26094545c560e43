import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Logger } from '../logger.js';
import { fileStamp, writeFileAtomic } from './atomic-file.js';

export interface JsonFileStoreOptions<T> {
  file: string;
  logger: Logger;
  /** The value of an absent or unusable file (a fresh object each call). */
  empty: () => T;
  /** Turns the parsed JSON into the value; throws an Error saying what is wrong ("has no \"packs\" object") when it cannot be used. */
  parse: (json: unknown) => T;
  /** What an unusable file costs while it stays, for the warning ("stored permissions are ignored (nothing is allowed by them)"). */
  whileUnusable: string;
  /** The file's mode (default 0600: kernel state is nobody else's business). */
  mode?: number;
}

/**
 * A JSON file that several processes share (`memo permissions revoke` in one, a running kernel in
 * another), with one corruption policy for all of them:
 * - it is re-read whenever it changed on disk (by its stamp: mtime, size, inode);
 * - writes are atomic (temp file, fsync, rename, folder fsync) with mode 0600;
 * - a file that cannot be read, is not JSON or does not have the expected shape is reported once per
 *   version (a warning naming the file and what is wrong, with the line and column of a syntax
 *   error, never its content), and the store holds the empty value meanwhile: never a half-read
 *   one, never a default that allows more. The file itself is left in place so a person can fix it;
 *   the next write moves it aside to `<file>.corrupt-<time>` (mode 0600) before writing, so it is
 *   never silently overwritten.
 */
export class JsonFileStore<T> {
  private value: T;
  private stamp = '';
  private changes = 0;
  private reported = '';
  private unusable: string | null = null;
  private readonly mode: number;

  constructor(private readonly options: JsonFileStoreOptions<T>) {
    this.value = options.empty();
    this.mode = options.mode ?? 0o600;
  }

  get file(): string {
    return this.options.file;
  }

  /** Why the file on disk cannot be used, if it cannot; null otherwise. */
  get problem(): string | null {
    this.reload();
    return this.unusable;
  }

  /**
   * Bumped whenever the value held changes (a write here, or a reload of the file). It does not look
   * at the disk (callers on hot paths compare it on every call): `read()` or `reload()` do.
   */
  get version(): number {
    return this.changes;
  }

  /** Re-reads the file if it changed on disk; true if it did. */
  reload(): boolean {
    const stamp = fileStamp(this.file);
    if (stamp === this.stamp) return false;
    this.stamp = stamp;
    this.changes++;
    this.value = this.options.empty();
    this.unusable = null;
    if (stamp === 'absent') return true;
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (err) {
      this.fail(`cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      return true;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      // Not the parser's message: it quotes the file's text, which may hold a key.
      this.fail(`is not valid JSON (${syntaxProblem(text)})`);
      return true;
    }
    try {
      this.value = this.options.parse(json);
    } catch (err) {
      this.value = this.options.empty();
      this.fail((err as Error).message);
    }
    return true;
  }

  /** The value as the file holds it now. Mutate it only to write it back with `write`. */
  read(): T {
    this.reload();
    return this.value;
  }

  /** Writes `value` as the file's new content (moving an unusable file aside first). */
  write(value: T): void {
    if (this.unusable !== null && fs.existsSync(this.file)) this.moveAside();
    this.unusable = null;
    writeFileAtomic(this.file, JSON.stringify(value, null, 2) + '\n', this.mode);
    this.value = value;
    this.stamp = fileStamp(this.file);
    this.changes++;
  }

  /** Reads the current value, lets `change` edit it (or return a new one), and writes the result. */
  update(change: (value: T) => T | void): T {
    const current = this.read();
    const next = change(current) ?? current;
    this.write(next);
    return next;
  }

  private fail(what: string): void {
    this.unusable = `${this.file} ${what}`;
    if (this.reported === this.stamp) return;
    this.reported = this.stamp;
    this.options.logger.warn(`${this.unusable}; ${this.options.whileUnusable} until it is fixed, or until the next change moves it aside`);
  }

  private moveAside(): void {
    let aside = `${this.file}.corrupt-${Date.now()}`;
    for (let n = 2; fs.existsSync(aside); n++) aside = `${this.file}.corrupt-${Date.now()}-${n}`;
    fs.renameSync(this.file, aside);
    // What could not be read may still hold secrets: it stays private whatever its mode was.
    try {
      fs.chmodSync(aside, this.mode);
    } catch {
      // A directory or a file we do not own: moved aside all the same.
    }
    this.options.logger.warn(`moved the unusable ${path.basename(this.file)} aside to ${aside}`);
  }
}

/**
 * Where and why a text is not JSON, as "line 3, column 7: ...". JSON.parse's own message on Node 20
 * gives no position for most errors (and quotes the text), so a small scanner finds the first fault.
 */
function syntaxProblem(text: string): string {
  const { at, what } = firstFault(text);
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  const column = at - before.lastIndexOf('\n');
  return `line ${line}, column ${column}: ${what}`;
}

function firstFault(text: string): { at: number; what: string } {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++; // bounded by the loop condition
  };
  class Fault extends Error {
    constructor(readonly what: string) {
      super(what);
    }
  }
  const unexpected = () => new Fault(i >= text.length ? 'the text ends too early' : 'unexpected character');
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else throw unexpected();
  };
  const string = () => {
    i++; // the opening quote
    while (i < text.length && text[i] !== '"') {
      const c = text.charCodeAt(i);
      if (c < 0x20) throw new Fault('control character inside a string');
      if (text[i] === '\\') {
        i++;
        if (text[i] === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) throw new Fault('bad \\u escape');
          i += 4;
        } else if (i >= text.length || !'"\\/bfnrt'.includes(text[i]!)) throw unexpected();
      }
      i++;
    }
    if (i >= text.length) throw new Fault('a string is not closed');
    i++;
  };
  const number = () => {
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m) throw unexpected();
    i += m[0].length;
  };
  const value = (depth: number): void => {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      if (depth > 512) throw new Fault('nested too deeply');
      const close = c === '{' ? '}' : ']';
      i++;
      ws();
      if (text[i] === close) return void i++;
      for (;;) {
        if (c === '{') {
          ws();
          if (text[i] !== '"') throw unexpected();
          string();
          ws();
          if (text[i] !== ':') throw unexpected();
          i++;
        }
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === close) return void i++;
        throw unexpected();
      }
    }
    if (c === '"') return string();
    if (c === 't') return literal('true');
    if (c === 'f') return literal('false');
    if (c === 'n') return literal('null');
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return number();
    throw unexpected();
  };
  try {
    value(0);
    ws();
    if (i < text.length) throw new Fault('more text after the JSON value');
  } catch (err) {
    if (err instanceof Fault) return { at: i, what: err.what };
    throw err;
  }
  // JSON.parse refused what this scanner accepts (it should not happen): no position then.
  return { at: 0, what: 'not JSON' };
}
