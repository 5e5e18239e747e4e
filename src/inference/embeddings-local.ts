// The embedded default embedding model: Universal Sentence Encoder lite (512 dimensions), shipped
// inside an npm package and run with TensorFlow.js on WASM, so it works offline with no
// configuration. It runs in a worker thread (the event loop keeps serving sandboxes), which loads
// the model as soon as it starts; batches sent meanwhile wait there for the load. Which texts go in
// a batch, and when, is decided by embeddings-builtin.ts: this class runs the batches it is sent.
// The thread runs embeddings-local-main.ts.
import type { Worker } from "node:worker_threads";
import { ApiError } from "../errors.js";
import { startWorker, workerEntry } from "../workers.js";
import { DEFAULT_EMBEDDING_DIMENSIONS, type EmbedReply, type EmbedRequest } from "./embeddings-protocol.js";

export { DEFAULT_EMBEDDING_DIMENSIONS, DEFAULT_EMBEDDING_MODEL } from "./embeddings-protocol.js";

const EMBEDDINGS_LOCAL_MAIN = workerEntry(import.meta.url, "embeddings-local-main");

interface Pending {
  count: number;
  resolve: (v: Float32Array[]) => void;
  reject: (e: Error) => void;
}

export class LocalEmbedder {
  private worker: Worker | undefined;
  private loading: Promise<void> | undefined;
  private isLoaded = false;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();

  /** Starts the worker, which loads the model; resolves once it is loaded (the same promise until the worker stops). */
  load(): Promise<void> {
    if (this.loading) return this.loading;
    const w = startWorker(EMBEDDINGS_LOCAL_MAIN);
    w.unref();
    this.worker = w;
    const loading = new Promise<void>((resolve, reject) => {
      w.on("message", (msg: EmbedReply) => {
        if ("ready" in msg) {
          if (this.worker === w) this.isLoaded = true;
          resolve();
        } else if ("loadError" in msg) {
          const err = new ApiError("internal_error", `The embedding model could not be loaded: ${msg.loadError}`);
          reject(err);
          this.stop(w, err);
        } else this.done(msg);
      });
      w.on("error", (err) => {
        const e = new ApiError("internal_error", `The embedding model failed: ${err.message}`);
        reject(e);
        this.stop(w, e);
      });
      w.on("exit", () => {
        const e = new ApiError("upstream_unavailable", "The embedding model stopped; retry", 1);
        reject(e);
        this.stop(w, e);
      });
    });
    // Not every caller waits for the load (a preload at start logs its own failure).
    loading.catch(() => {});
    this.loading = loading;
    return loading;
  }

  /** Whether the model is loaded and ready. */
  loaded(): boolean {
    return this.isLoaded;
  }

  /** Embeds one batch; resolves with one 512-dimension vector per text. */
  async embed(texts: string[]): Promise<Float32Array[]> {
    const loading = this.load();
    const w = this.worker as Worker;
    await loading;
    if (this.worker !== w) throw new ApiError("upstream_unavailable", "The embedding model stopped; retry", 1);
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { count: texts.length, resolve, reject });
      const request: EmbedRequest = { id, texts };
      w.postMessage(request);
    });
  }

  private done(msg: Exclude<EmbedReply, { ready: true } | { loadError: string }>): void {
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if ("error" in msg) {
      p.reject(new ApiError("internal_error", `The embedding model failed: ${msg.error}`));
      return;
    }
    const d = DEFAULT_EMBEDDING_DIMENSIONS;
    const rows: Float32Array[] = [];
    for (let i = 0; i < p.count; i++) rows.push(msg.data.slice(i * d, (i + 1) * d));
    p.resolve(rows);
  }

  /** Forgets a failed worker (the next batch starts a new one) and fails what it had. */
  private stop(w: Worker, err: Error): void {
    if (this.worker !== w) return;
    this.worker = undefined;
    this.loading = undefined;
    this.isLoaded = false;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    w.removeAllListeners("exit");
    void w.terminate();
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.loading = undefined;
    this.isLoaded = false;
    if (w) {
      w.removeAllListeners("exit");
      await w.terminate();
    }
  }
}
