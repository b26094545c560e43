/**
 * The model file of the `llama-cpp` kind, checked before node-llama-cpp is loaded: a path a
 * person can act on when it is wrong, and the GGUF header's context length read synchronously
 * (the kernel asks for the window before the first request, long before the model is loaded).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ProviderError } from 'memo-kernel/pack';

const configError = (message: string, detail: string) => new ProviderError(message, null, false, detail);

/**
 * Refuses, with a sentence a person can act on, a model path that is not an absolute path to a
 * readable file starting with the GGUF signature. Returns the normalised path.
 */
export function checkModelFile(provider: string, model: string | undefined): string {
  if (!model) {
    throw configError(
      `Provider "${provider}" has no model: set model to the absolute path of a .gguf file (memo provider add ${provider} --kind llama-cpp --preset gguf --model /path/to/model.gguf).`,
      'llama-cpp no model path',
    );
  }
  if (!path.isAbsolute(model)) {
    throw configError(
      `Provider "${provider}": the model "${model}" is not an absolute path; give the full path of the .gguf file.`,
      'llama-cpp relative model path',
    );
  }
  const file = path.normalize(model);
  if (!/\.gguf$/i.test(file)) {
    throw configError(
      `Provider "${provider}": ${file} is not a .gguf file; the llama-cpp kind loads GGUF models only (use a GGUF build of the model).`,
      'llama-cpp not a .gguf path',
    );
  }
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw configError(`There is no model file at ${file}: check the path of provider "${provider}".`, `llama-cpp ${code}`);
    if (code === 'EACCES' || code === 'EPERM') throw configError(`The model file ${file} cannot be read (permission denied).`, `llama-cpp ${code}`);
    throw configError(`The model file ${file} cannot be read (${code ?? (err as Error).message}).`, `llama-cpp stat ${code ?? ''}`);
  }
  if (stat.isDirectory()) throw configError(`${file} is a directory, not a .gguf file.`, 'llama-cpp model path is a directory');
  let fd: number | undefined;
  const head = Buffer.alloc(8);
  let read: number;
  try {
    fd = fs.openSync(file, 'r');
    read = fs.readSync(fd, head, 0, 8, 0);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') throw configError(`The model file ${file} cannot be read (permission denied).`, `llama-cpp ${code}`);
    throw configError(`The model file ${file} cannot be read (${code ?? (err as Error).message}).`, `llama-cpp read ${code ?? ''}`);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
  if (read < 8 || head.toString('latin1', 0, 4) !== 'GGUF') {
    throw configError(
      `${file} is not a GGUF model: it does not start with the GGUF signature (a damaged or incomplete download, or another format).`,
      'llama-cpp bad magic',
    );
  }
  const version = head.readUInt32LE(4);
  if (version < 2 || version > 3) {
    throw configError(
      `${file} is GGUF version ${version}, which this llama.cpp cannot read (versions 2 and 3 are supported).`,
      `llama-cpp gguf version ${version}`,
    );
  }
  return file;
}

/** What the header says about the model (read once per file version). */
export interface GgufHeader {
  architecture?: string;
  contextLength?: number;
}

const TYPE_SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8;
const ARRAY = 9;

/** Sequential reads of a file through a small buffer (the header of a 4 GB model is a few MB). */
class FileReader {
  private buf = Buffer.alloc(1 << 16);
  private start = 0;
  private end = 0;
  pos = 0;
  constructor(private readonly fd: number) {}
  private need(n: number): void {
    if (this.pos >= this.start && this.pos + n <= this.end) return;
    if (n > this.buf.length) this.buf = Buffer.alloc(n);
    this.start = this.pos;
    this.end = this.pos + fs.readSync(this.fd, this.buf, 0, this.buf.length, this.pos);
    if (this.pos + n > this.end) throw new Error('truncated GGUF header');
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos - this.start);
    this.pos += 4;
    return v;
  }
  u64(): number {
    this.need(8);
    const v = this.buf.readBigUInt64LE(this.pos - this.start);
    this.pos += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('GGUF length out of range');
    return Number(v);
  }
  string(): string {
    const n = this.u64();
    if (n > 1 << 24) throw new Error('GGUF string too long');
    this.need(n);
    const s = this.buf.toString('utf8', this.pos - this.start, this.pos - this.start + n);
    this.pos += n;
    return s;
  }
  skipString(): void {
    const n = this.u64(); // read first: `this.pos += this.u64()` would add to the old position
    this.pos += n;
  }
  scalar(type: number): number | undefined {
    const size = TYPE_SIZES[type];
    if (size === undefined) throw new Error(`unknown GGUF value type ${type}`);
    this.need(size);
    const at = this.pos - this.start;
    this.pos += size;
    switch (type) {
      case 0:
        return this.buf.readUInt8(at);
      case 1:
        return this.buf.readInt8(at);
      case 2:
        return this.buf.readUInt16LE(at);
      case 3:
        return this.buf.readInt16LE(at);
      case 4:
        return this.buf.readUInt32LE(at);
      case 5:
        return this.buf.readInt32LE(at);
      case 10:
        return Number(this.buf.readBigUInt64LE(at));
      case 11:
        return Number(this.buf.readBigInt64LE(at));
      default:
        return undefined;
    }
  }
  skipValue(type: number): void {
    if (type === STRING) return this.skipString();
    if (type === ARRAY) {
      const itemType = this.u32();
      const n = this.u64();
      if (itemType === STRING) for (let i = 0; i < n; i++) this.skipString();
      else if (itemType === ARRAY) for (let i = 0; i < n; i++) this.skipValue(ARRAY);
      else {
        const size = TYPE_SIZES[itemType];
        if (size === undefined) throw new Error(`unknown GGUF value type ${itemType}`);
        this.pos += size * n;
      }
      return;
    }
    const size = TYPE_SIZES[type];
    if (size === undefined) throw new Error(`unknown GGUF value type ${type}`);
    this.pos += size;
  }
}

/**
 * Reads `general.architecture` and `<arch>.context_length` from a GGUF file's metadata without
 * loading the model. Undefined fields when the header does not have them or cannot be parsed.
 */
export function readGgufHeader(file: string): GgufHeader {
  const out: GgufHeader = {};
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const r = new FileReader(fd);
    r.pos = 8; // magic and version, checked by checkModelFile
    r.u64(); // tensor count
    const kvCount = r.u64();
    const numbers = new Map<string, number>();
    for (let i = 0; i < kvCount; i++) {
      const key = r.string();
      const type = r.u32();
      if (key === 'general.architecture' && type === STRING) out.architecture = r.string();
      else if (key.endsWith('.context_length') && TYPE_SIZES[type] !== undefined && type !== 6 && type !== 7 && type !== 12) {
        const v = r.scalar(type);
        if (v !== undefined) numbers.set(key, v);
      } else r.skipValue(type);
      if (out.architecture && numbers.has(`${out.architecture}.context_length`)) break;
    }
    const n = out.architecture ? numbers.get(`${out.architecture}.context_length`) : undefined;
    if (n !== undefined && Number.isInteger(n) && n > 0) out.contextLength = n;
  } catch {
    // A header that cannot be parsed: llama.cpp says why when the model is loaded.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
  return out;
}
