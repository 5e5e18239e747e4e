// Placement of a new sandbox: the best of a few executors sampled at random ("power of k
// choices"), by free memory per live sandbox, among those that hold its template's files when
// any does; of a deployment that asks for GPUs, the same among the executors with them free.
// Pure: the membership view and the random source are given.

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
export function choose<C extends Candidate>(candidates: readonly C[], sample: number, random: () => number = Math.random): C | undefined {
  const pool = [...candidates];
  const picked: C[] = [];
  while (picked.length < sample && pool.length > 0) {
    const i = Math.min(pool.length - 1, Math.floor(random() * pool.length));
    picked.push(...pool.splice(i, 1));
  }
  let best: C | undefined;
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

/** What a deployment asks of GPUs: `count` of a model `matches` accepts (by the name a node reports). */
export interface GpuRequest {
  /** The gpu_model asked for, as the client named it. */
  model: string;
  count: number;
  matches(model: string): boolean;
}

/** An executor as GPU placement sees it: its load and its GPUs by model (how many, how many free). */
export interface GpuCandidate extends Candidate {
  gpus: readonly { model: string; count: number; free: number }[];
}

/**
 * Where a deployment asking for GPUs goes: among the executors with `want.count` matching GPUs
 * free, the best by load (choose()). Otherwise why not: `no_such_gpu` when no executor has any GPU
 * of that model, `too_few_gpus` when none has that many even all free (both never change by
 * waiting: a 400), `gpus_busy` when some has them but deployments hold them now (a 503). Pure.
 */
export function chooseWithGpus<C extends GpuCandidate>(
  candidates: readonly C[],
  want: GpuRequest,
  sample: number,
  random: () => number = Math.random,
): { node: C } | { refused: "no_such_gpu" | "too_few_gpus" | "gpus_busy" } {
  const matching = (c: C, field: "count" | "free") => c.gpus.reduce((n, g) => n + (want.matches(g.model) ? g[field] : 0), 0);
  if (!candidates.some((c) => matching(c, "count") > 0)) return { refused: "no_such_gpu" };
  if (!candidates.some((c) => matching(c, "count") >= want.count)) return { refused: "too_few_gpus" };
  const fits = candidates.filter((c) => matching(c, "free") >= want.count);
  // The sample is drawn from the executors that fit: one with the GPUs free is never missed.
  const node = choose(fits, sample, random);
  return node ? { node } : { refused: "gpus_busy" };
}
