// The recall trade-off, measured through the real service on three kinds of data: the benchmark's
// own mixture (a low intrinsic dimension), hard Gaussian clusters (points spread as widely as the
// centres lie apart, and 3× wider), and real sentence embeddings from the default embedding model.
// For each: recall@10 of held-out queries against exact top-10 and HTTP search latency at fixed
// widths (48 is the old fixed width), at the index's own adapted width, and for `exact: true`
// (the same run's baseline), with the width and recall the index chose and reported itself.
import { startServer } from "../test/helpers/server.js";
import { clustered, mixture, rng } from "../test/helpers/vectors-data.js";
import { keepAliveClient, percentile } from "./lib.js";
import {
  BENCH_ENV,
  type Call,
  encodeBatches,
  exactTopK,
  indexView,
  loadAverage,
  recallAt10,
  upsertAll,
  vec,
  waitIndex,
} from "./vectors-lib.js";

const WIDTHS = [16, 24, 32, 48, 64, 96, 128, 256];
const OLD_FIXED = 48;
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);

interface DataSet {
  name: string;
  dim: number;
  n: number;
  data: Float32Array;
  queries: Float32Array;
  cosine: boolean;
}

interface Point {
  label: string;
  recall: number;
  p50: number;
  p99: number;
}

export interface RecallResult {
  set: DataSet;
  points: Point[];
  chosenWidth: number;
  estimate: number | null;
  builtS: number;
}

function heldOut(name: string, all: Float32Array, n: number, dim: number): DataSet {
  return { name, dim, n, data: all.subarray(0, n * dim), queries: all.subarray(n * dim), cosine: false };
}

/** Sentences from word lists, a topic each, so that neighbours share meaning, not only words. */
function sentences(count: number, seed: number): string[] {
  const r = rng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)] as T;
  const topics = [
    ["password", "login", "account", "two-factor code", "session", "email address"],
    ["invoice", "refund", "payment", "subscription", "credit card", "receipt"],
    ["python script", "stack trace", "memory leak", "unit test", "build", "dependency"],
    ["flight", "hotel room", "train ticket", "passport", "luggage", "booking"],
    ["recipe", "oven", "dinner", "vegetables", "dessert", "grocery list"],
    ["printer", "laptop", "monitor", "keyboard", "wifi router", "battery"],
    ["garden", "tomato plants", "lawn", "roses", "compost", "watering schedule"],
    ["football match", "marathon", "tennis racket", "swimming lessons", "gym", "training plan"],
    ["contract", "lease", "tax return", "insurance claim", "warranty", "court date"],
    ["vaccine", "headache", "prescription", "doctor's appointment", "allergy", "sleep"],
  ];
  const verbs = ["reset", "cancel", "fix", "change", "find", "update", "check", "book", "replace", "share", "delete", "plan"];
  const adjectives = ["old", "new", "broken", "shared", "monthly", "urgent", "second", "cheap", "slow", "missing"];
  const frames = [
    (v: string, a: string, x: string) => `How do I ${v} my ${a} ${x}?`,
    (v: string, a: string, x: string) => `I need to ${v} the ${a} ${x} before Friday.`,
    (v: string, a: string, x: string) => `Can someone help me ${v} a ${a} ${x}`,
    (v: string, a: string, x: string) => `What is the best way to ${v} an ${a} ${x} and the ${x}s around it?`,
    (v: string, a: string, x: string) => `My ${a} ${x} stopped working, should I ${v} it`,
    (v: string, a: string, x: string) => `Why does it take so long to ${v} the ${a} ${x}?`,
  ];
  return Array.from({ length: count }, () => {
    const topic = pick(topics);
    const s = pick(frames)(pick(verbs), pick(adjectives), pick(topic));
    return r() < 0.4 ? `${s} Also the ${pick(topic)} is ${pick(adjectives)}.` : s;
  });
}

/** Embeds the sentences with the default model (batches of 64); rows of 512 floats. */
async function embed(call: Call, texts: string[]): Promise<{ data: Float32Array; dim: number }> {
  const rows: number[][] = [];
  for (let i = 0; i < texts.length; i += 64) {
    const res = await call<{ data: Array<{ embedding: number[] }> }>("POST", "/v1/inference/embeddings", { input: texts.slice(i, i + 64) });
    if (res.status !== 200) throw new Error(`embeddings: ${res.status} ${JSON.stringify(res.body)}`);
    for (const d of res.body.data) rows.push(d.embedding);
  }
  const dim = (rows[0] as number[]).length;
  const data = new Float32Array(rows.length * dim);
  rows.forEach((row, i) => {
    data.set(row, i * dim);
  });
  return { data, dim };
}

async function measureSet(call: Call, set: DataSet): Promise<RecallResult> {
  const created = await call<{ id: string }>("POST", "/v1/vectors/indexes", {
    name: set.name
      .replace(/[^a-z0-9]+/gi, "-")
      .toLowerCase()
      .slice(0, 60),
    dimension: set.dim,
    metric: set.cosine ? "cosine" : "euclidean",
  });
  if (created.status !== 200) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  const index = created.body.id;
  const t0 = performance.now();
  await upsertAll(call, index, encodeBatches(set.data, set.dim, set.n, false));
  // Built, and its recall measured by the index itself.
  if (!(await waitIndex(call, index, (v) => v.status === "ready" && v.estimated_recall !== null, 600_000)))
    throw new Error(`${set.name}: the index never measured its recall`);
  const builtS = (performance.now() - t0) / 1000;
  const view = await indexView(call, index);
  const nq = set.queries.length / set.dim;
  const qs = Array.from({ length: nq }, (_, q) => set.queries.subarray(q * set.dim, (q + 1) * set.dim));
  const truth = exactTopK(set.data, set.dim, qs, 10, 2, set.cosine);
  const bodies = (extra: Record<string, unknown>) =>
    qs.map((_, q) => JSON.stringify({ vector: vec(set.queries, set.dim, q), top_k: 10, include_metadata: false, ...extra }));
  const points: Point[] = [];
  const run = async (label: string, extra: Record<string, unknown>) => {
    const ms: number[] = [];
    const found: number[][] = [];
    for (const body of bodies(extra)) {
      const t = performance.now();
      const res = await call<{ hits: Array<{ id: string }> }>("POST", `/v1/vectors/${index}/search`, body);
      ms.push(performance.now() - t);
      if (res.status !== 200) throw new Error(`search: ${res.status} ${JSON.stringify(res.body)}`);
      found.push(res.body.hits.map((h) => Number(h.id)));
    }
    ms.sort((a, b) => a - b);
    points.push({ label, recall: recallAt10(found, truth), p50: percentile(ms, 50), p99: percentile(ms, 99) });
  };
  // A round of warm-up at the index's own width (connections, the first searches of the worker).
  await run("warm-up", {});
  points.pop();
  for (const w of WIDTHS) await run(String(w), { search_width: w });
  await run("adaptive", {});
  await run("exact", { exact: true });
  await call("DELETE", `/v1/vectors/indexes/${index}`);
  return { set, points, chosenWidth: view.search_width, estimate: view.estimated_recall, builtS };
}

/** The data sets: `n` vectors of 64 dimensions each (the size is 50,000), and `sentences` embedded sentences. */
async function dataSets(call: Call, n: number, sentenceCount: number): Promise<DataSet[]> {
  const dim = 64;
  const m = mixture(n, dim, 7, QUERIES);
  const sets: DataSet[] = [
    { name: `benchmark mixture, ${n.toLocaleString("en")} × ${dim}`, dim, n, data: m.data, queries: m.queries, cosine: false },
    heldOut(`40 Gaussian clusters, spread = spacing, ${n.toLocaleString("en")} × ${dim}`, clustered(n + QUERIES, dim, 40, 11), n, dim),
    heldOut(`40 Gaussian clusters, spread 3× spacing, ${n.toLocaleString("en")} × ${dim}`, clustered(n + QUERIES, dim, 40, 13, 3), n, dim),
  ];
  if (sentenceCount > 0) {
    const t0 = performance.now();
    const e = await embed(call, sentences(sentenceCount + QUERIES, 17));
    process.stdout.write(`embedded ${sentenceCount + QUERIES} sentences in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    sets.push({
      ...heldOut(`sentence embeddings (default model), ${sentenceCount.toLocaleString("en")} × ${e.dim}`, e.data, sentenceCount, e.dim),
      cosine: true,
    });
  }
  return sets;
}

const cell = (p: Point | undefined) => (p ? `${p.recall.toFixed(3)} (${p.p50.toFixed(2)} ms)` : "");

/** Runs every data set through one service; returns the printed tables. */
export async function benchRecall(n: number, sentenceCount: number, machine: () => string): Promise<string[]> {
  const server = await startServer({ env: BENCH_ENV });
  const out: string[] = [];
  try {
    const call = keepAliveClient(server, 4);
    const results: RecallResult[] = [];
    for (const set of await dataSets(call, n, sentenceCount)) {
      process.stdout.write(`\n## recall: ${set.name}\n`);
      const r = await measureSet(call, set);
      results.push(r);
      process.stdout.write(
        `built and measured in ${r.builtS.toFixed(1)} s; the index chose width ${r.chosenWidth} (its estimate ${r.estimate}); load average ${loadAverage()}\n`,
      );
      for (const p of r.points)
        process.stdout.write(`  ${p.label}: recall@10 ${p.recall.toFixed(3)}, p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms\n`);
    }
    const at = (r: RecallResult, label: string) => r.points.find((p) => p.label === label);
    const summary = [
      `### recall@10 at the old fixed width (${OLD_FIXED}) and at the adaptive width (target 0.97), ${QUERIES} held-out queries; same-run baseline: exact search`,
      "",
      machine(),
      "",
      "| data | old width 48: recall@10 | p50 / p99 ms | adaptive: width (index's estimate) | recall@10 | p50 / p99 ms | exact search (baseline): p50 / p99 ms |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
      ...results.map((r) => {
        const old = at(r, String(OLD_FIXED)) as Point;
        const ad = at(r, "adaptive") as Point;
        const ex = at(r, "exact") as Point;
        return `| ${r.set.name} | ${old.recall.toFixed(3)} | ${old.p50.toFixed(2)} / ${old.p99.toFixed(2)} | ${r.chosenWidth} (${r.estimate}) | ${ad.recall.toFixed(3)} | ${ad.p50.toFixed(2)} / ${ad.p99.toFixed(2)} | ${ex.p50.toFixed(2)} / ${ex.p99.toFixed(2)} |`;
      }),
    ].join("\n");
    const tradeOff = [
      "### recall@10 (p50 ms of an HTTP search) by search width",
      "",
      machine(),
      "",
      `| data | ${WIDTHS.join(" | ")} | exact |`,
      `| --- | ${WIDTHS.map(() => "---:").join(" | ")} | ---: |`,
      ...results.map((r) => `| ${r.set.name} | ${WIDTHS.map((w) => cell(at(r, String(w)))).join(" | ")} | ${cell(at(r, "exact"))} |`),
    ].join("\n");
    for (const t of [summary, tradeOff]) {
      process.stdout.write(`\n${t}\n`);
      out.push(t);
    }
  } finally {
    await server.dispose();
  }
  return out;
}
