// The upsert body parser thread: parses a large upsert body (1,000 vectors are ~1.3 MB of JSON,
// tens of milliseconds of JSON.parse and schema checks), checks it against the route's schema, and
// hands the vectors back with their embeddings packed in one transferable array, for BatchParser
// (batch-parser.ts). Anything that is not a valid batch goes back as "not parsed".
import { parentPort, workerData } from "node:worker_threads";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { jsonDepthExceeds } from "../api/bounds.js";
import type { BatchParserData, ParsedBatch, ParseReply, ParseRequest } from "./batch-parse-protocol.js";
import { UpsertBody } from "./schemas.js";
import { backgroundThread } from "./thread-priority.js";

const port = parentPort as NonNullable<typeof parentPort>;
// Searches come first: a bulk load's commits (parses) take the CPU they leave.
backgroundThread();
const { maxDepth } = workerData as BatchParserData;
const valid = TypeCompiler.Compile(UpsertBody);
const decoder = new TextDecoder();

interface VectorIn {
  id?: string;
  embedding: number[];
  metadata?: Record<string, unknown>;
  delete_protection?: boolean;
}

function parse(body: Uint8Array): ParsedBatch | undefined {
  const text = decoder.decode(body);
  if (jsonDepthExceeds(text, maxDepth)) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!valid.Check(doc)) return undefined;
  // As the routes read a body: {vectors: [...]}, or one vector.
  const list = (doc as { vectors?: unknown }).vectors;
  const vectors = (Array.isArray(list) ? list : [doc]) as VectorIn[];
  const lengths = Uint32Array.from(vectors, (v) => v.embedding.length);
  const embeddings = new Float64Array(lengths.reduce((a, b) => a + b, 0));
  let at = 0;
  for (const v of vectors) {
    embeddings.set(v.embedding, at);
    at += v.embedding.length;
  }
  return {
    ids: vectors.map((v) => v.id),
    embeddings,
    lengths,
    metadata: vectors.map((v) => v.metadata),
    protect: vectors.map((v) => v.delete_protection),
  };
}

port.on("message", (m: ParseRequest) => {
  let batch: ParsedBatch | undefined;
  try {
    batch = parse(m.body);
  } catch {
    batch = undefined;
  }
  const reply: ParseReply = { id: m.id, batch };
  port.postMessage(reply, batch ? [batch.embeddings.buffer as ArrayBuffer, batch.lengths.buffer as ArrayBuffer] : []);
});
