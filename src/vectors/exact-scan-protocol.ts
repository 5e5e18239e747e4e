// The messages between ExactScanner (exact-scan.ts) and its worker thread (exact-scan-main.ts).
import type { Metric } from "./engine.js";

/** A request; every one carries an id its answer repeats, and the scan it belongs to. */
export type ExactScanRequest =
  /** A scan for the `k` nearest rows to each query (rows of `dim` floats); a query's row in
   * `exclude` (-1: none) is left out (a sampled vector is not its own neighbour). */
  | { op: "start"; id: number; scan: number; dim: number; metric: Metric; queries: Float32Array; k: number; exclude: Int32Array }
  /** The next rows of the index from row `first` on; rows whose `mask` is 0 are left out. */
  | { op: "rows"; id: number; scan: number; first: number; vecs: Float32Array; mask: Uint8Array }
  /** The rows are all sent: answers the nearest rows of each query, and forgets the scan. */
  | { op: "end"; id: number; scan: number };

export interface ExactScanReply {
  id: number;
  /** To "end": each query's nearest rows, nearest first. */
  nearest?: number[][];
  error?: string;
}
