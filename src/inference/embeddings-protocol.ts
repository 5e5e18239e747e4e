// The messages between LocalEmbedder (embeddings-local.ts) and its worker thread (embeddings-local-main.ts).

export const DEFAULT_EMBEDDING_MODEL = "universal-sentence-encoder-lite";
/** The model's vectors' length: the worker packs each batch's vectors one after another in one array. */
export const DEFAULT_EMBEDDING_DIMENSIONS = 512;

/** A batch to embed. */
export interface EmbedRequest {
  id: number;
  texts: string[];
}

/** From the worker: the model loaded (or failed to), or a batch's vectors (one after another) or error. */
export type EmbedReply = { ready: true } | { loadError: string } | { id: number; data: Float32Array } | { id: number; error: string };
