// The messages between readRecords (record-loader.ts) and its worker thread (record-loader-main.ts).

/** What the worker reads: one index's records from the vectors database. */
export interface RecordLoaderData {
  file: string;
  indexId: string;
  dim: number;
  /** Records per chunk. */
  chunk: number;
}

/** One chunk of records, in write order. */
export interface RecordChunk {
  labels: Float64Array;
  seqs: Float64Array;
  /** The embeddings one after another (dimension floats each). */
  vectors: Float32Array;
  ids: string[];
  /** Each record's metadata as stored (JSON text). */
  metadata: string[];
}

/** A chunk as the worker sends it: `done` on the last one. */
export interface RecordChunkMessage extends RecordChunk {
  done: boolean;
}

/** Any message to the worker asks it for the next chunk. */
export type RecordRequest = "next";
