// Parses large upsert bodies off the event loop: JSON.parse and the schema check of a batch of
// 1,000 vectors held up every other request (searches among them) for tens of milliseconds each
// under a bulk load. The body goes to a worker thread (batch-parser-main.ts), which answers with
// the vectors, their embeddings packed in one array; a body that is not a valid batch comes back
// unparsed and is parsed here as any other, so its errors are the usual ones.
import type { Worker } from "node:worker_threads";
import { startWorker, workerEntry } from "../workers.js";
import type { BatchParserData, ParseReply, ParseRequest } from "./batch-parse-protocol.js";
import type { VectorIn } from "./service.js";

const BATCH_PARSER_MAIN = workerEntry(import.meta.url, "batch-parser-main");

export class BatchParser {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, (v: VectorIn[] | undefined) => void>();

  constructor(private readonly maxDepth: number) {}

  /** Started on the first large body (most services never see one). */
  private thread(): Worker {
    if (this.worker) return this.worker;
    const workerData: BatchParserData = { maxDepth: this.maxDepth };
    const w = startWorker(BATCH_PARSER_MAIN, { workerData });
    w.unref();
    w.on("message", (m: ParseReply) => {
      const done = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      const b = m.batch;
      if (!b) return done?.(undefined);
      let at = 0;
      const vectors = b.ids.map((id, i): VectorIn => {
        const n = b.lengths[i] as number;
        const embedding = b.embeddings.subarray(at, at + n);
        at += n;
        const v: VectorIn = { embedding };
        if (id !== undefined) v.id = id;
        if (b.metadata[i] !== undefined) v.metadata = b.metadata[i];
        if (b.protect[i] !== undefined) v.delete_protection = b.protect[i];
        return v;
      });
      done?.(vectors);
    });
    const fail = () => {
      // Whatever was waiting is parsed on the main thread instead; the next body starts a new thread.
      this.worker = undefined;
      for (const done of this.waiting.values()) done(undefined);
      this.waiting.clear();
    };
    w.on("error", fail);
    w.on("exit", fail);
    this.worker = w;
    return w;
  }

  /** The body's vectors when it is a valid upsert body; undefined otherwise. */
  parse(body: Buffer): Promise<VectorIn[] | undefined> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      const m: ParseRequest = { id, body };
      this.thread().postMessage(m);
    });
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
  }
}
