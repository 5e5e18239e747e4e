// Placement of a new sandbox: the best of a few executors sampled at random ("power of k
// choices"), by free memory per live sandbox, among those that hold its template's files when
// any does. Pure: the membership view and the random source are given.

export interface Candidate {
  id: string;
  /** Available memory of the node, MiB. */
  freeMemoryMb: number;
  liveSandboxes: number;
}

/** Higher is better: the memory each sandbox would have if the new one went there. */
export function score(c: Candidate): number {
  return c.freeMemoryMb / (c.liveSandboxes + 1);
}

/**
 * The node a create goes to, or undefined when there is none. `sample` nodes are drawn without
 * replacement (all of them when there are fewer); ties go to fewer live sandboxes, then the id.
 */
export function choose(candidates: readonly Candidate[], sample: number, random: () => number = Math.random): Candidate | undefined {
  const pool = [...candidates];
  const picked: Candidate[] = [];
  while (picked.length < sample && pool.length > 0) {
    const i = Math.min(pool.length - 1, Math.floor(random() * pool.length));
    picked.push(...pool.splice(i, 1));
  }
  let best: Candidate | undefined;
  for (const c of picked) {
    if (
      !best ||
      score(c) > score(best) ||
      (score(c) === score(best) && (c.liveSandboxes < best.liveSandboxes || (c.liveSandboxes === best.liveSandboxes && c.id < best.id)))
    )
      best = c;
  }
  return best;
}

/**
 * The executors a create of a template goes to: those of `executors` that hold its files
 * (`holders`, node ids) when any of them does; all of them otherwise (the one chosen fetches the
 * files), and for a template whose files are everywhere (a built-in: `holders` undefined).
 */
export function preferHolders<C extends { id: string }>(executors: readonly C[], holders: readonly string[] | undefined): readonly C[] {
  if (!holders) return executors;
  const holding = executors.filter((n) => holders.includes(n.id));
  return holding.length > 0 ? holding : executors;
}
