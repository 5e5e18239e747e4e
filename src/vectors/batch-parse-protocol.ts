// The messages between BatchParser (batch-parser.ts) and its worker thread (batch-parser-main.ts).

/** What the worker needs at start. */
export interface BatchParserData {
  /** Deepest JSON nesting a body may have (AGENTBOX_MAX_JSON_DEPTH). */
  maxDepth: number;
}

/** A body to parse. */
export interface ParseRequest {
  id: number;
  body: Uint8Array;
}

/** A parsed batch that matches the route's schema: the vectors' fields, the embeddings packed. */
export interface ParsedBatch {
  ids: Array<string | undefined>;
  /** Every embedding one after another, as JSON's numbers (64-bit: the service checks them). */
  embeddings: Float64Array;
  /** Each embedding's length. */
  lengths: Uint32Array;
  metadata: Array<Record<string, unknown> | undefined>;
  protect: Array<boolean | undefined>;
}

/** `batch` when the body is a valid batch; otherwise nothing (the main thread parses it itself
 * and answers with the same errors as for any other body). */
export interface ParseReply {
  id: number;
  batch?: ParsedBatch;
}
