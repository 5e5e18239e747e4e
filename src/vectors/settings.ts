// Settings of the vectors area read from the environment (documented in docs/operations.md).

function positiveInt(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > max) throw new Error(`${name} must be an integer from 1 to ${max}, got '${raw}'`);
  return value;
}

/** Candidates an unfiltered graph search walks and rescores exactly (HNSW's ef at search time):
 * higher is better recall and slower search. */
export const SEARCH_EF = positiveInt("AGENTBOX_VECTOR_SEARCH_EF", 48, 4096);

/** Seconds without writes after which an index's changed graph is saved (a crash after that
 * leaves nothing to rebuild). */
export const SAVE_IDLE_S = positiveInt("AGENTBOX_VECTOR_SAVE_IDLE_S", 30, 3600);

/** recall@10 an index's searches should reach unless it sets its own (each index measures its
 * recall and widens or narrows its search to keep it). */
export const DEFAULT_TARGET_RECALL = fraction("AGENTBOX_VECTOR_TARGET_RECALL", 0.97);

function fraction(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0.5 || value > 1) throw new Error(`${name} must be a number from 0.5 to 1, got '${raw}'`);
  return value;
}
