// Seeded random data for the vector tests and benchmark: the same numbers on every run.

/** Seeded generator (mulberry32): uniform numbers in [0, 1). */
export function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal numbers drawn from `r` (Box-Muller). */
export const gaussian = (r: () => number) => () => Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());

/** The benchmark's data: a Gaussian mixture whose spread decays over the dimensions (a low
 * intrinsic dimension, like many real embeddings); `queries` more points drawn the same way. */
export function mixture(n: number, dim: number, seed: number, queries = 200): { data: Float32Array; queries: Float32Array } {
  const r = rng(seed);
  const gauss = gaussian(r);
  const clusters = Math.max(50, Math.round(n / 2000));
  const centres = Array.from({ length: clusters }, () => Float32Array.from({ length: dim }, () => gauss()));
  const spread = Float32Array.from({ length: dim }, (_, j) => 0.5 * 0.97 ** j);
  const make = (count: number) => {
    const out = new Float32Array(count * dim);
    for (let i = 0; i < count; i++) {
      const c = centres[Math.floor(r() * clusters)] as Float32Array;
      for (let j = 0; j < dim; j++) out[i * dim + j] = (c[j] as number) + (spread[j] as number) * gauss();
    }
    return out;
  };
  return { data: make(n), queries: make(queries) };
}

/**
 * Gaussian clusters whose points spread around their centre as widely as the centres lie apart
 * (a high intrinsic dimension: neighbours are not much nearer than the rest, the hard case for a
 * graph search; `spread` above 1 spreads them wider still): `n` vectors of `dim` floats, one after another.
 */
export function clustered(n: number, dim: number, clusters: number, seed: number, spread = 1): Float32Array {
  const g = gaussian(rng(seed));
  const centres = Float32Array.from({ length: clusters * dim }, () => g() / spread);
  const out = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    const c = i % clusters;
    for (let j = 0; j < dim; j++) out[i * dim + j] = (centres[c * dim + j] as number) + g();
  }
  return out;
}
