// The messages between VectorWriter (writer.ts) and its worker thread (writer-main.ts).
import type { IndexRow } from "./rows.js";

/** What the worker needs at start. */
export interface WriterData {
  /** The vectors database (migrated already by the main thread). */
  file: string;
}

/** A batch of vectors as the worker takes it: the embeddings packed (handed over, not copied). */
export interface UpsertBatch {
  ids: string[];
  /** `dim` floats per vector, one vector after another. */
  vectors: Float32Array;
  dim: number;
  /** Each vector's metadata as JSON. */
  metadata: string[];
  /** 1 where delete protection is on. */
  protect: Uint8Array;
}

/** One write. `check` asks the main thread a question inside the transaction before it commits
 * (the quota check, or the protected ids of a delete); the answer decides commit or rollback. */
export type WriteOp =
  | { op: "insertIndex"; row: IndexRow }
  | { op: "updateIndex"; indexId: string; metadata: string; deleteProtection: boolean; targetRecall: number | null; at: string }
  | { op: "deleteIndex"; indexId: string }
  | { op: "upsert"; indexId: string; batch: UpsertBatch; check: boolean }
  | { op: "delete"; indexId: string; ids: string[]; check: boolean }
  | { op: "updateVector"; indexId: string; vectorId: string; metadata: string; deleteProtection: boolean; at: string; check: boolean }
  | { op: "pruneTombstones"; indexId: string; seq: number };

/** To the worker: a write (with its id), the answer to a question, or the end. */
export type WriterRequest = (WriteOp & { id: number }) | { op: "answer"; id: number; ok: boolean } | { op: "close" };

/** What a write asks before it commits. */
export type WriterQuestion = { kind: "admit"; added: { vectors: number; bytes: number } } | { kind: "protected"; ids: string[] };

/** From the worker: a question about write `id`, or its outcome. */
export type WriterReply =
  | { op: "ask"; id: number; question: WriterQuestion }
  | { op: "done"; id: number; result?: unknown; error?: string; refused?: boolean }
  | { op: "closed" };
