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

/** What the record scanner needs at start. */
export interface RecordScanData {
  file: string;
}

/** One exact search over an index's stored records (while the index is still loading). */
export interface ScanRequest {
  kind: "search";
  id: number;
  indexId: string;
  dim: number;
  metric: "cosine" | "euclidean" | "dotproduct";
  query: Float32Array;
  topK: number;
  /** The filter as the client sent it (validated already); compiled again in the scanner. */
  filter: unknown;
  includeValues: boolean;
  includeMetadata: boolean;
}

/** Searches of the index read its vectors file from now on, brought up to date with the writes
 * after it that are in the database when the thread reads them (vector-file-since.ts); every
 * write to the index acknowledged from now on is sent after this too (ScanWrites, ScanDeletes:
 * one the thread read already changes nothing when sent again). Answered by a ScanFileReply. */
export interface ScanUseFile {
  kind: "file";
  indexId: string;
  file: string;
  dim: number;
}

/** Writes acknowledged after ScanUseFile, in order: each item first drops the label it replaced
 * (-1: none), then adds its own. */
export interface ScanWrites {
  kind: "writes";
  indexId: string;
  replaced: Float64Array;
  labels: Float64Array;
  ids: string[];
  /** The embeddings one after another. */
  vectors: Float32Array;
}

/** Deletes acknowledged after ScanUseFile. */
export interface ScanDeletes {
  kind: "deletes";
  indexId: string;
  labels: number[];
}

/** The index is gone (or no longer scanned from its file). */
export interface ScanForget {
  kind: "forget";
  indexId: string;
}

export type ScanMessage = ScanRequest | ScanUseFile | ScanWrites | ScanDeletes | ScanForget;

/** Whether the index's vectors file is in use, and what it took to bring it up to date. */
export interface ScanFileReply {
  kind: "file";
  indexId: string;
  used: boolean;
  /** Why not, when not. */
  reason?: string;
  /** The file's write sequence (0: no file), the writes after it read from its side log, and
   * those after them read from the database at start. */
  upTo?: number;
  logged?: number;
  writtenSince?: number;
  droppedSince?: number;
  /** Reading the file and the writes since, in the scanner thread. */
  ms: number;
}

export interface ScanReply {
  kind?: undefined;
  id: number;
  hits?: Array<{ id: string; score: number; values?: number[]; metadata?: Record<string, unknown> }>;
  /** What answered: the index's vectors file (with the writes since), or a pass over its rows. */
  source?: "file" | "records";
  /** The search's time in the scanner thread. */
  ms?: number;
  error?: string;
}
