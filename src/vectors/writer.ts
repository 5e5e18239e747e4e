// The main thread's side of the vectors database's writer thread (writer-main.ts): posts each
// write and resolves once it is committed (a write is acknowledged to a client only after that),
// answering on the way the question the write asks inside its transaction. Writes are committed in
// the order they are posted.
import type { Worker } from "node:worker_threads";
import { startWorker, workerEntry } from "../workers.js";
import type { WriteOp, WriterData, WriterQuestion, WriterReply, WriterRequest } from "./writer-protocol.js";

const WRITER_MAIN = workerEntry(import.meta.url, "writer-main");

/** Answers a write's question; throwing refuses the write (and is what the write rejects with). */
export type Answer = (q: WriterQuestion) => void;

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  answer?: Answer;
  /** What the answer threw: the write rejects with it once rolled back. */
  refusal?: unknown;
}

export class VectorWriter {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private dead: Error | undefined;
  private closing: Promise<void> | undefined;

  constructor(file: string) {
    const workerData: WriterData = { file };
    this.worker = startWorker(WRITER_MAIN, { workerData });
    this.worker.unref();
    this.worker.on("message", (m: WriterReply) => this.onMessage(m));
    const fail = (err: Error) => {
      this.dead ??= err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    this.worker.on("error", fail);
    this.worker.on("exit", () => fail(new Error("the vector writer stopped")));
  }

  private post(m: WriterRequest, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(m, transfer);
  }

  private onMessage(m: WriterReply): void {
    if (m.op === "closed") return;
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.op === "ask") {
      let ok = true;
      try {
        p.answer?.(m.question);
      } catch (err) {
        ok = false;
        p.refusal = err;
      }
      this.post({ op: "answer", id: m.id, ok });
      return;
    }
    this.pending.delete(m.id);
    if (m.error === undefined) p.resolve(m.result);
    else if (m.refused && p.refusal !== undefined) p.reject(p.refusal as Error);
    else p.reject(new Error(m.error));
  }

  /** Runs one write; resolves with its result once committed. `transfer`: arrays handed over. */
  write<T>(op: WriteOp, answer?: Answer, transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.dead) return Promise.reject(this.dead);
    if (this.closing) return Promise.reject(new Error("the vectors database is closed"));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, answer });
      this.post({ ...op, id }, transfer);
    });
  }

  /** Lets the writes posted so far commit, then closes the connection and the thread. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.dead) {
        const closed = new Promise<void>((resolve) => {
          const done = (m: WriterReply) => {
            if (m.op === "closed") resolve();
          };
          this.worker.on("message", done);
          this.worker.once("exit", () => resolve());
        });
        this.post({ op: "close" });
        await closed;
      }
      await this.worker.terminate();
    })();
    return this.closing;
  }
}
