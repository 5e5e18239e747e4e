// Starts a worker thread from a real entry file next to the caller: the built `.js` file in
// production, the `.ts` source when the service runs from source under tsx.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker, type WorkerOptions } from "node:worker_threads";

/** The path of entry `name` (no extension) in the folder of `callerUrl` (the caller's import.meta.url), with the caller's extension. */
export function workerEntry(callerUrl: string, name: string): string {
  const caller = fileURLToPath(callerUrl);
  return path.join(path.dirname(caller), `${name}${path.extname(caller)}`);
}

/** Starts `entry` (from workerEntry) in a worker thread. */
export function startWorker(entry: string, options: Omit<WorkerOptions, "eval"> = {}): Worker {
  if (!entry.endsWith(".ts")) return new Worker(entry, options);
  // From source: Node 20 runs neither --import nor the parent's loader hooks in a worker, so the
  // worker loads the entry through tsx's in-thread require hook (no extra loader thread: ~0.2 s per
  // worker instead of ~0.5 s for tsx's module hooks). Only this one-line loader is a string.
  const tsx = createRequire(import.meta.url).resolve("tsx/cjs/api");
  const boot = `require(${JSON.stringify(tsx)}).require(${JSON.stringify(entry)}, ${JSON.stringify(entry)});`;
  return new Worker(boot, { ...options, eval: true });
}
