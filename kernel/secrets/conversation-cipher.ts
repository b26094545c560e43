import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { MemoError } from '../errors.js';
import { writeFileAtomic } from '../util/atomic-file.js';

/** Every encrypted value starts with this: anything else in a content column is a legacy plaintext row. */
export const CIPHER_PREFIX = 'enc1:';

interface KeyFile {
  version: 1;
  /** The key new values are written with. */
  current: string;
  /** Every key still needed to read something (more than one only while a rotation runs). */
  keys: Record<string, string>;
}

/**
 * Authenticated encryption of conversation content (AES-256-GCM) with keys kept in a 0600 file in
 * the data folder, the kernel's own state that no tool can reach (see kernel/sandbox/kernel-state.ts).
 * A value is `enc1:<key id>:<iv>:<tag>:<ciphertext>` (base64url); its associated data names the
 * row and field, so a ciphertext moved to another row or column does not decrypt.
 */
export class ConversationCipher {
  private constructor(
    private readonly file: string,
    private state: KeyFile,
  ) {}

  /** Reads the key file; null when there is none. A damaged file is an error, never replaced. */
  static load(file: string): ConversationCipher | null {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    let state: KeyFile;
    try {
      state = JSON.parse(text) as KeyFile;
      if (state.version !== 1 || typeof state.keys?.[state.current] !== 'string') throw new Error('no current key');
      for (const k of Object.values(state.keys)) if (Buffer.from(k, 'base64').length !== 32) throw new Error('a key is not 256 bits');
    } catch (err) {
      throw new MemoError(
        'CONFLICT',
        `The conversation key file ${file} is damaged (${(err as Error).message}): restore it from a backup; it is left as it is.`,
      );
    }
    return new ConversationCipher(file, state);
  }

  /** Makes a new key file (0600). */
  static create(file: string): ConversationCipher {
    const id = randomBytes(6).toString('hex');
    const cipher = new ConversationCipher(file, { version: 1, current: id, keys: { [id]: randomBytes(32).toString('base64') } });
    cipher.save();
    return cipher;
  }

  private save(): void {
    writeFileAtomic(this.file, JSON.stringify(this.state, null, 2) + '\n', 0o600);
  }

  get currentKeyId(): string {
    return this.state.current;
  }

  static isEncrypted(value: string): boolean {
    return value.startsWith(CIPHER_PREFIX);
  }

  encrypt(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', Buffer.from(this.state.keys[this.state.current]!, 'base64'), iv);
    c.setAAD(Buffer.from(context, 'utf8'));
    const ct = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    return `${CIPHER_PREFIX}${this.state.current}:${iv.toString('base64url')}:${c.getAuthTag().toString('base64url')}:${ct.toString('base64url')}`;
  }

  /** The plaintext of a value; a legacy plaintext value (no prefix) is returned as it is. */
  decrypt(value: string, context: string): string {
    if (!ConversationCipher.isEncrypted(value)) return value;
    const [keyId, iv, tag, ct] = value.slice(CIPHER_PREFIX.length).split(':');
    const key = keyId ? this.state.keys[keyId] : undefined;
    if (!key || iv === undefined || tag === undefined || ct === undefined) {
      throw new MemoError(
        'CONFLICT',
        `A conversation value is encrypted with key ${keyId ?? '?'}, which ${this.file} does not hold: restore the key file that wrote it.`,
      );
    }
    try {
      const d = createDecipheriv('aes-256-gcm', Buffer.from(key, 'base64'), Buffer.from(iv, 'base64url'));
      d.setAAD(Buffer.from(context, 'utf8'));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    } catch (err) {
      throw new MemoError('CONFLICT', `A conversation value (${context}) fails its authentication check: it was altered or moved. It is left as it is.`, {
        cause: err,
      });
    }
  }

  /** Rotation, step 1: a new current key, the old ones kept so nothing becomes unreadable midway. */
  beginRotation(): string {
    const id = randomBytes(6).toString('hex');
    this.state = { ...this.state, current: id, keys: { ...this.state.keys, [id]: randomBytes(32).toString('base64') } };
    this.save();
    return id;
  }

  /** Rotation, step 2, once every value is written with the current key: the old keys are dropped. */
  finishRotation(): number {
    const old = Object.keys(this.state.keys).filter((k) => k !== this.state.current);
    this.state = { ...this.state, keys: { [this.state.current]: this.state.keys[this.state.current]! } };
    this.save();
    return old.length;
  }
}
