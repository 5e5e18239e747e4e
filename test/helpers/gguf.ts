// A minimal GGUF v3 writer and a generator of tiny llama-architecture models with random weights,
// so the local inference engine's tests load, tokenize and generate with a real model file that the
// suite makes itself (nothing is downloaded).
//
// Layout of a GGUF v3 file (little-endian): magic "GGUF", u32 version, u64 tensor count, u64
// metadata count, the metadata key/values, the tensor infos (name, dims, type, offset), padding to
// `general.alignment`, then the tensor data (each tensor aligned too).
import fs from "node:fs";

const ALIGNMENT = 32;

enum ValueType {
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
}

/** A metadata value with its GGUF type made explicit (JS numbers do not say which one they are). */
export type MetaValue =
  | { type: "u32"; value: number }
  | { type: "i32"; value: number }
  | { type: "f32"; value: number }
  | { type: "bool"; value: boolean }
  | { type: "string"; value: string }
  | { type: "string[]"; value: string[] }
  | { type: "f32[]"; value: ArrayLike<number> }
  | { type: "i32[]"; value: ArrayLike<number> };

export interface Tensor {
  name: string;
  /** GGML order: dims[0] is the innermost (contiguous) dimension. */
  dims: number[];
  data: Float32Array;
}

class Writer {
  private chunks: Buffer[] = [];
  size = 0;

  private push(buf: Buffer): void {
    this.chunks.push(buf);
    this.size += buf.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  i32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  f32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  str(s: string): void {
    const bytes = Buffer.from(s, "utf8");
    this.u64(bytes.length);
    this.push(bytes);
  }
  raw(buf: Buffer): void {
    this.push(buf);
  }
  pad(): void {
    const rem = this.size % ALIGNMENT;
    if (rem !== 0) this.push(Buffer.alloc(ALIGNMENT - rem));
  }
  result(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

function writeValue(w: Writer, v: MetaValue): void {
  switch (v.type) {
    case "u32":
      w.u32(ValueType.UINT32);
      w.u32(v.value);
      break;
    case "i32":
      w.u32(ValueType.INT32);
      w.i32(v.value);
      break;
    case "f32":
      w.u32(ValueType.FLOAT32);
      w.f32(v.value);
      break;
    case "bool":
      w.u32(ValueType.BOOL);
      w.raw(Buffer.from([v.value ? 1 : 0]));
      break;
    case "string":
      w.u32(ValueType.STRING);
      w.str(v.value);
      break;
    case "string[]":
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.STRING);
      w.u64(v.value.length);
      for (const s of v.value) w.str(s);
      break;
    case "f32[]":
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.FLOAT32);
      w.u64(v.value.length);
      for (let i = 0; i < v.value.length; i++) w.f32(v.value[i] as number);
      break;
    case "i32[]":
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.INT32);
      w.u64(v.value.length);
      for (let i = 0; i < v.value.length; i++) w.i32(v.value[i] as number);
      break;
  }
}

/** Serialises a GGUF v3 file with F32 tensors. */
export function encodeGguf(metadata: Record<string, MetaValue>, tensors: Tensor[]): Buffer {
  const w = new Writer();
  w.raw(Buffer.from("GGUF", "ascii"));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(Object.keys(metadata).length);
  for (const [key, value] of Object.entries(metadata)) {
    w.str(key);
    writeValue(w, value);
  }
  let offset = 0;
  for (const t of tensors) {
    const count = t.dims.reduce((a, b) => a * b, 1);
    if (count !== t.data.length) throw new Error(`tensor ${t.name}: dims ${t.dims.join("x")} do not match ${t.data.length} values`);
    w.str(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(0); // GGML_TYPE_F32
    w.u64(offset);
    offset += Math.ceil((count * 4) / ALIGNMENT) * ALIGNMENT;
  }
  w.pad();
  for (const t of tensors) {
    w.raw(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    w.pad();
  }
  return w.result();
}

/** A small deterministic PRNG (mulberry32), so the same seed gives the same model. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The words of the tiny model's vocabulary (SentencePiece style: "▁" marks a leading space). */
export const TINY_WORDS = [
  "hello",
  "world",
  "the",
  "cat",
  "sat",
  "on",
  "mat",
  "dog",
  "ran",
  "fast",
  "slow",
  "red",
  "blue",
  "green",
  "apple",
  "tree",
  "sky",
  "sun",
  "moon",
  "star",
  "code",
  "run",
  "box",
  "sand",
  "river",
  "stone",
  "light",
  "dark",
  "one",
  "two",
  "three",
  "four",
  "five",
  "six",
  "seven",
  "eight",
  "nine",
  "ten",
  "yes",
  "no",
];

export interface TinyModelOptions {
  seed?: number;
  layers?: number;
  embedding?: number;
  heads?: number;
  feedForward?: number;
  contextLength?: number;
}

/**
 * Writes a llama-architecture GGUF with random F32 weights and a SentencePiece ("llama") vocabulary:
 * <unk>, <s>, </s>, the 256 byte tokens, then each word with and without a leading "▁", then a few
 * single letters. The output rows of the special and byte tokens are zero, so greedy generation
 * always picks a word token (never end-of-sequence), which makes generation length and text
 * deterministic for tests. Returns the file path.
 */
export function writeTinyLlama(file: string, opts: TinyModelOptions = {}): string {
  const nLayer = opts.layers ?? 2;
  const nEmbd = opts.embedding ?? 64;
  const nHead = opts.heads ?? 4;
  const nFf = opts.feedForward ?? 128;
  const nCtx = opts.contextLength ?? 512;
  const rand = rng(opts.seed ?? 1234);

  const tokens: string[] = ["<unk>", "<s>", "</s>"];
  const types: number[] = [2, 3, 3]; // unknown, control, control
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(6); // byte
  }
  const firstWord = tokens.length;
  for (const word of TINY_WORDS) {
    tokens.push(`▁${word}`, word);
    types.push(1, 1);
  }
  for (const ch of "abcdefghijklmnopqrstuvwxyz.,!?") {
    tokens.push(ch);
    types.push(1);
  }
  tokens.push("▁");
  types.push(1);
  const nVocab = tokens.length;
  // Longer pieces score higher, so the tokenizer prefers whole words.
  const scores = tokens.map((t, i) => (i < firstWord ? 0 : -100 + t.length));

  const randn = (n: number, scale: number): Float32Array => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = (rand() * 2 - 1) * scale;
    return a;
  };
  const ones = (n: number) => new Float32Array(n).fill(1);
  const matScale = 1 / Math.sqrt(nEmbd);

  const tensors: Tensor[] = [{ name: "token_embd.weight", dims: [nEmbd, nVocab], data: randn(nEmbd * nVocab, 1) }];
  for (let l = 0; l < nLayer; l++) {
    const p = `blk.${l}`;
    tensors.push(
      { name: `${p}.attn_norm.weight`, dims: [nEmbd], data: ones(nEmbd) },
      { name: `${p}.attn_q.weight`, dims: [nEmbd, nEmbd], data: randn(nEmbd * nEmbd, matScale) },
      { name: `${p}.attn_k.weight`, dims: [nEmbd, nEmbd], data: randn(nEmbd * nEmbd, matScale) },
      { name: `${p}.attn_v.weight`, dims: [nEmbd, nEmbd], data: randn(nEmbd * nEmbd, matScale) },
      { name: `${p}.attn_output.weight`, dims: [nEmbd, nEmbd], data: randn(nEmbd * nEmbd, matScale) },
      { name: `${p}.ffn_norm.weight`, dims: [nEmbd], data: ones(nEmbd) },
      { name: `${p}.ffn_gate.weight`, dims: [nEmbd, nFf], data: randn(nEmbd * nFf, matScale) },
      { name: `${p}.ffn_up.weight`, dims: [nEmbd, nFf], data: randn(nEmbd * nFf, matScale) },
      { name: `${p}.ffn_down.weight`, dims: [nFf, nEmbd], data: randn(nFf * nEmbd, 1 / Math.sqrt(nFf)) },
    );
  }
  const output = randn(nEmbd * nVocab, 1);
  output.fill(0, 0, firstWord * nEmbd); // never generate <unk>, <s>, </s> or a raw byte
  tensors.push(
    { name: "output_norm.weight", dims: [nEmbd], data: ones(nEmbd) },
    { name: "output.weight", dims: [nEmbd, nVocab], data: output },
  );

  const metadata: Record<string, MetaValue> = {
    "general.architecture": { type: "string", value: "llama" },
    "general.name": { type: "string", value: "tiny-random-llama" },
    "general.file_type": { type: "u32", value: 0 }, // all F32
    "general.alignment": { type: "u32", value: ALIGNMENT },
    "llama.context_length": { type: "u32", value: nCtx },
    "llama.embedding_length": { type: "u32", value: nEmbd },
    "llama.block_count": { type: "u32", value: nLayer },
    "llama.feed_forward_length": { type: "u32", value: nFf },
    "llama.attention.head_count": { type: "u32", value: nHead },
    "llama.attention.head_count_kv": { type: "u32", value: nHead },
    "llama.attention.layer_norm_rms_epsilon": { type: "f32", value: 1e-5 },
    "llama.rope.dimension_count": { type: "u32", value: nEmbd / nHead },
    "llama.rope.freq_base": { type: "f32", value: 10000 },
    "llama.vocab_size": { type: "u32", value: nVocab },
    "tokenizer.ggml.model": { type: "string", value: "llama" },
    "tokenizer.ggml.tokens": { type: "string[]", value: tokens },
    "tokenizer.ggml.scores": { type: "f32[]", value: scores },
    "tokenizer.ggml.token_type": { type: "i32[]", value: types },
    "tokenizer.ggml.unknown_token_id": { type: "u32", value: 0 },
    "tokenizer.ggml.bos_token_id": { type: "u32", value: 1 },
    "tokenizer.ggml.eos_token_id": { type: "u32", value: 2 },
    "tokenizer.ggml.add_bos_token": { type: "bool", value: true },
    "tokenizer.ggml.add_eos_token": { type: "bool", value: false },
  };
  fs.writeFileSync(file, encodeGguf(metadata, tensors));
  return file;
}
