// The vectors database's writer thread: owns the one connection that writes it and runs each write
// for VectorWriter (writer.ts) in the order posted, one transaction at a time, so a batch's SQLite
// commit never holds up the service's event loop. A write's question to the main thread (its quota
// check) is asked and answered inside its transaction; the outcome is posted once it committed.
import { parentPort, workerData } from "node:worker_threads";
import { openSqlite } from "../store/db.js";
import { RecordWrites } from "./record-writes.js";
import { backgroundThread } from "./thread-priority.js";
import type { WriteOp, WriterData, WriterQuestion, WriterReply, WriterRequest } from "./writer-protocol.js";

const port = parentPort as NonNullable<typeof parentPort>;
// Searches come first: a bulk load's commits (parses) take the CPU they leave.
backgroundThread();
const { file } = workerData as WriterData;
const db = openSqlite(file);
const writes = new RecordWrites(db);
const post = (m: WriterReply): void => port.postMessage(m);
/** The answer awaited by the write in progress (one at a time). */
let answer: ((ok: boolean) => void) | undefined;
let queue: Promise<void> = Promise.resolve();

class Refused extends Error {}

function ask(id: number, question: WriterQuestion): Promise<void> {
  return new Promise((resolve, reject) => {
    answer = (ok) => {
      answer = undefined;
      if (ok) resolve();
      else reject(new Refused("refused"));
    };
    post({ op: "ask", id, question });
  });
}

async function write(m: WriteOp & { id: number }): Promise<void> {
  try {
    const result = await writes.run(m, (q) => ask(m.id, q));
    post({ op: "done", id: m.id, result });
  } catch (err) {
    post({ op: "done", id: m.id, error: String((err as Error | undefined)?.message ?? err), refused: err instanceof Refused });
  }
}

port.on("message", (m: WriterRequest) => {
  if (m.op === "answer") answer?.(m.ok);
  else if (m.op === "close") {
    queue = queue.then(() => {
      db.close();
      post({ op: "closed" });
    });
  } else queue = queue.then(() => write(m));
});
