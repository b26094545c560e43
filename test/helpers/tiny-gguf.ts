/**
 * Generates a tiny, valid GGUF v3 file: a llama-architecture model with random (seeded) F32
 * weights and a SentencePiece-style ("llama") vocabulary, small enough that llama.cpp loads it
 * and generates a few dozen tokens in milliseconds. Its answers are noise; it exists so the
 * in-process provider can be tested end to end without downloading a model.
 *
 * The layout (ggml docs/gguf.md), all little-endian:
 *   header      "GGUF", u32 version = 3, u64 tensor count, u64 metadata count
 *   metadata    per pair: string key, u32 value type, value (arrays: u32 item type, u64 length, items)
 *   tensor info per tensor: string name, u32 n_dims, u64 dims[n_dims] (ne[0] first: the row
 *               length), u32 ggml type (0 = F32), u64 offset from the start of the data section
 *   padding     zeros up to `general.alignment` (32)
 *   data        each tensor at its offset, every offset a multiple of the alignment
 * A string is a u64 byte length followed by UTF-8 bytes (no terminator).
 *
 * What llama.cpp needs of a llama model: `general.architecture = "llama"`, the hyperparameters
 * `llama.context_length`, `.embedding_length`, `.block_count`, `.feed_forward_length`,
 * `.attention.head_count`, `.attention.layer_norm_rms_epsilon` (`.attention.head_count_kv` and
 * `.rope.dimension_count` are optional, given here), the tensors named as below with these shapes,
 * and a vocabulary whose size matches the embedding's rows. The "llama" (SentencePiece) tokenizer
 * falls back to byte tokens `<0x00>`..`<0xFF>` for text it has no piece for, and looks up the
 * newline byte at load, so all 256 must be present; ids 0, 1, 2 are `<unk>`, `<s>`, `</s>`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface TinyGgufOptions {
  /** Seed of the weights (same seed, same file). */
  seed?: number;
  contextLength?: number;
  embeddingLength?: number;
  blockCount?: number;
  headCount?: number;
  headCountKv?: number;
  feedForwardLength?: number;
  /** Jinja chat template stored as `tokenizer.chat_template`; ChatML by default. */
  chatTemplate?: string | null;
  name?: string;
  /** Write the tokenizer's arrays before the hyperparameters (readers must skip them). */
  tokenizerFirst?: boolean;
}

/** ChatML, the template most local models ship (Qwen, Hermes, ...). */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// gguf value types
const T_UINT32 = 4;
const T_INT32 = 5;
const T_FLOAT32 = 6;
const T_BOOL = 7;
const T_STRING = 8;
const T_ARRAY = 9;
// ggml tensor type
const GGML_F32 = 0;
// llama.cpp token types
const TOKEN_NORMAL = 1;
const TOKEN_UNKNOWN = 2;
const TOKEN_CONTROL = 3;
const TOKEN_BYTE = 6;

const ALIGNMENT = 32;

type Value =
  | { type: 'u32'; value: number }
  | { type: 'f32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'strings'; value: string[] }
  | { type: 'f32s'; value: number[] }
  | { type: 'i32s'; value: number[] };

/** A little-endian byte writer that grows as needed. */
class Writer {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }
  i32(v: number): void {
    this.ensure(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  u64(v: number): void {
    this.ensure(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  f32(v: number): void {
    this.ensure(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  u8(v: number): void {
    this.ensure(1);
    this.buf.writeUInt8(v, this.length);
    this.length += 1;
  }
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.bytes(bytes);
  }
  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  pad(alignment: number): void {
    while (this.length % alignment) this.u8(0);
  }
  done(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function writeValue(w: Writer, v: Value): void {
  switch (v.type) {
    case 'u32':
      w.u32(T_UINT32);
      w.u32(v.value);
      break;
    case 'f32':
      w.u32(T_FLOAT32);
      w.f32(v.value);
      break;
    case 'bool':
      w.u32(T_BOOL);
      w.u8(v.value ? 1 : 0);
      break;
    case 'string':
      w.u32(T_STRING);
      w.string(v.value);
      break;
    case 'strings':
      w.u32(T_ARRAY);
      w.u32(T_STRING);
      w.u64(v.value.length);
      for (const s of v.value) w.string(s);
      break;
    case 'f32s':
      w.u32(T_ARRAY);
      w.u32(T_FLOAT32);
      w.u64(v.value.length);
      for (const x of v.value) w.f32(x);
      break;
    case 'i32s':
      w.u32(T_ARRAY);
      w.u32(T_INT32);
      w.u64(v.value.length);
      for (const x of v.value) w.i32(x);
      break;
  }
}

/** mulberry32: a small seeded generator, so the same seed writes the same bytes. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'the',
  'a',
  'is',
  'and',
  'to',
  'of',
  'you',
  'I',
  'it',
  'in',
  'what',
  'number',
  'magic',
  'use',
  'tool',
  'then',
  'answer',
  'with',
  'only',
  'hello',
  'world',
  'call',
  'function',
  'user',
  'assistant',
  'system',
  'can',
  'get',
  'result',
  'name',
  'are',
  'an',
  'for',
  'this',
  'that',
  'say',
  'please',
  'yes',
  'no',
  'ok',
];

/**
 * The vocabulary: `<unk>`, `<s>`, `</s>`, the 256 byte tokens, the ChatML markers as control
 * tokens, every printable ASCII character, `▁` (SentencePiece's space) and, for a few words, every
 * prefix of `▁word` (SentencePiece merges adjacent pieces whose concatenation is a token, so a word
 * becomes one token only if each step is one). Longer pieces score higher, so they merge first.
 */
export function tinyVocab(): { tokens: string[]; scores: number[]; types: number[] } {
  const tokens: string[] = [];
  const scores: number[] = [];
  const types: number[] = [];
  const seen = new Set<string>();
  const add = (t: string, score: number, type: number) => {
    if (seen.has(t)) return;
    seen.add(t);
    tokens.push(t);
    scores.push(score);
    types.push(type);
  };
  add('<unk>', 0, TOKEN_UNKNOWN);
  add('<s>', 0, TOKEN_CONTROL);
  add('</s>', 0, TOKEN_CONTROL);
  for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0, TOKEN_BYTE);
  add('<|im_start|>', 0, TOKEN_CONTROL);
  add('<|im_end|>', 0, TOKEN_CONTROL);
  add('\u2581', -1, TOKEN_NORMAL);
  for (let c = 33; c < 127; c++) add(String.fromCharCode(c), -1, TOKEN_NORMAL);
  for (const word of WORDS) {
    const piece = `\u2581${word}`;
    for (let n = 2; n <= piece.length; n++) add(piece.slice(0, n), n, TOKEN_NORMAL);
  }
  return { tokens, scores, types };
}

export interface TinyGgufInfo {
  file: string;
  contextLength: number;
  vocabSize: number;
}

/** Builds the GGUF bytes. */
export function tinyGguf(options: TinyGgufOptions = {}): Buffer {
  const nCtx = options.contextLength ?? 256;
  const nEmbd = options.embeddingLength ?? 64;
  const nLayer = options.blockCount ?? 1;
  const nHead = options.headCount ?? 4;
  const nHeadKv = options.headCountKv ?? nHead;
  const nFf = options.feedForwardLength ?? 128;
  const headDim = nEmbd / nHead;
  if (!Number.isInteger(headDim)) throw new Error('embeddingLength must be a multiple of headCount');
  const vocab = tinyVocab();
  const nVocab = vocab.tokens.length;
  const rand = random(options.seed ?? 1);
  const template = options.chatTemplate === undefined ? CHATML_TEMPLATE : options.chatTemplate;

  const tokenizer: Array<[string, Value]> = [
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'strings', value: vocab.tokens }],
    ['tokenizer.ggml.scores', { type: 'f32s', value: vocab.scores }],
    ['tokenizer.ggml.token_type', { type: 'i32s', value: vocab.types }],
    ['tokenizer.ggml.unknown_token_id', { type: 'u32', value: 0 }],
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: 1 }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: 2 }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: true }],
    ['tokenizer.ggml.add_eos_token', { type: 'bool', value: false }],
  ];
  if (template) tokenizer.push(['tokenizer.chat_template', { type: 'string', value: template }]);
  const metadata: Array<[string, Value]> = [
    ...(options.tokenizerFirst ? tokenizer : []),
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: options.name ?? 'memo-tiny-random' }],
    ['general.alignment', { type: 'u32', value: ALIGNMENT }],
    ['general.file_type', { type: 'u32', value: 0 }], // all F32
    ['llama.context_length', { type: 'u32', value: nCtx }],
    ['llama.embedding_length', { type: 'u32', value: nEmbd }],
    ['llama.block_count', { type: 'u32', value: nLayer }],
    ['llama.feed_forward_length', { type: 'u32', value: nFf }],
    ['llama.attention.head_count', { type: 'u32', value: nHead }],
    ['llama.attention.head_count_kv', { type: 'u32', value: nHeadKv }],
    ['llama.attention.layer_norm_rms_epsilon', { type: 'f32', value: 1e-5 }],
    ['llama.rope.dimension_count', { type: 'u32', value: headDim }],
    ['llama.rope.freq_base', { type: 'f32', value: 10000 }],
    ['llama.vocab_size', { type: 'u32', value: nVocab }],
    ...(options.tokenizerFirst ? [] : tokenizer),
  ];

  // Shapes as ggml's ne (row length first): a [in, out] weight multiplies an `in` vector into `out`.
  const tensors: Array<{ name: string; dims: number[]; norm?: boolean }> = [{ name: 'token_embd.weight', dims: [nEmbd, nVocab] }];
  for (let i = 0; i < nLayer; i++) {
    tensors.push(
      { name: `blk.${i}.attn_norm.weight`, dims: [nEmbd], norm: true },
      { name: `blk.${i}.attn_q.weight`, dims: [nEmbd, nHead * headDim] },
      { name: `blk.${i}.attn_k.weight`, dims: [nEmbd, nHeadKv * headDim] },
      { name: `blk.${i}.attn_v.weight`, dims: [nEmbd, nHeadKv * headDim] },
      { name: `blk.${i}.attn_output.weight`, dims: [nHead * headDim, nEmbd] },
      { name: `blk.${i}.ffn_norm.weight`, dims: [nEmbd], norm: true },
      { name: `blk.${i}.ffn_gate.weight`, dims: [nEmbd, nFf] },
      { name: `blk.${i}.ffn_up.weight`, dims: [nEmbd, nFf] },
      { name: `blk.${i}.ffn_down.weight`, dims: [nFf, nEmbd] },
    );
  }
  tensors.push({ name: 'output_norm.weight', dims: [nEmbd], norm: true }, { name: 'output.weight', dims: [nEmbd, nVocab] });

  const w = new Writer();
  w.bytes(Buffer.from('GGUF', 'ascii'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(metadata.length);
  for (const [key, value] of metadata) {
    w.string(key);
    writeValue(w, value);
  }
  let offset = 0;
  const sizes = tensors.map((t) => t.dims.reduce((a, b) => a * b, 1) * 4);
  tensors.forEach((t, i) => {
    w.string(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(GGML_F32);
    w.u64(offset);
    offset += sizes[i]!; // one size per tensor
    offset += (ALIGNMENT - (offset % ALIGNMENT)) % ALIGNMENT;
  });
  w.pad(ALIGNMENT);
  tensors.forEach((t, i) => {
    const count = sizes[i]! / 4; // one size per tensor
    // Norm weights are 1 (plain RMS norm); the rest uniform in ±1/sqrt(row length).
    const scale = 1 / Math.sqrt(t.dims[0] ?? NaN);
    for (let k = 0; k < count; k++) w.f32(t.norm ? 1 : (rand() * 2 - 1) * scale);
    w.pad(ALIGNMENT);
  });
  return w.done();
}

/** Writes a tiny model into `dir` and says what it holds. */
export function writeTinyGguf(dir: string, options: TinyGgufOptions = {}, fileName = 'tiny.gguf'): TinyGgufInfo {
  const file = path.join(dir, fileName);
  fs.writeFileSync(file, tinyGguf(options));
  return { file, contextLength: options.contextLength ?? 256, vocabSize: tinyVocab().tokens.length };
}
