// The embedded vectors engine on a data directory, as the service opens it, with what it logs
// kept for a test to read (which path answered a search, what a restart loaded).
import { EmbeddedEngine } from "../../src/vectors/embedded.js";
import { VectorDb } from "../../src/vectors/store.js";

export interface Logged {
  msg: string;
  fields?: Record<string, unknown>;
}

export function openEngine(dir: string): { store: VectorDb; engine: EmbeddedEngine; logs: Logged[] } {
  const logs: Logged[] = [];
  const store = new VectorDb(dir);
  const engine = new EmbeddedEngine(store, dir, (msg, fields) => logs.push({ msg, fields }));
  return { store, engine, logs };
}
