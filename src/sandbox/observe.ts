// Following a run or command as it happens (a streaming client): the box hands each output chunk
// and rich result to an OutputWatch as it arrives, and an aborted signal interrupts the run.
// RunObserver is the service-level view of the same thing (text, not bytes). Absent, neither
// costs a run anything.
import { StringDecoder } from "node:string_decoder";
import type { RichResult } from "./protocol.js";

/** What the box reports while a run or command is under way. */
export interface OutputWatch {
  output(stream: 1 | 2, body: Buffer): void;
  result(result: RichResult): void;
  /** Aborted when nobody listens any more: the run is interrupted (a python kernel keeps its state). */
  signal?: AbortSignal;
}

/** A caller of the sandbox service following a run. */
export interface RunObserver {
  /** The run was accepted (validated, execution slot held) and starts now. */
  started(): void;
  output(stream: "stdout" | "stderr", text: string): void;
  result(result: RichResult): void;
  signal?: AbortSignal;
}

/** Adapts an observer to the box: bytes become text, a UTF-8 sequence split between chunks kept whole. */
export function outputWatch(observer: RunObserver): OutputWatch {
  const decoders = { 1: new StringDecoder("utf8"), 2: new StringDecoder("utf8") };
  return {
    output(stream, body) {
      const text = decoders[stream].write(body);
      if (text) observer.output(stream === 1 ? "stdout" : "stderr", text);
    },
    result: (r) => observer.result(r),
    signal: observer.signal,
  };
}

/** Calls `cancel` once when `signal` aborts (at once if it already has); returns what stops listening. */
export function onAbort(signal: AbortSignal | undefined, cancel: () => void): () => void {
  if (!signal) return () => {};
  if (signal.aborted) {
    cancel();
    return () => {};
  }
  signal.addEventListener("abort", cancel, { once: true });
  return () => signal.removeEventListener("abort", cancel);
}
