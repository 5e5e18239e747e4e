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
