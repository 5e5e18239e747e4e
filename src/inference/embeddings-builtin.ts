// The built-in embedding model as every tenant shares it: a request's texts are cut into small
// jobs, which the fair scheduler (fair-scheduler.ts) runs round-robin across tenants on the model's
// worker (embeddings-local.ts); a tenant's bound, the client going away and the request's deadline
// are enforced there.
import { ApiError } from "../errors.js";
import type { EmbeddingsConfig } from "./embeddings-config.js";
import { LocalEmbedder } from "./embeddings-local.js";
import { FairScheduler, type JobOutcome, type Part } from "./fair-scheduler.js";

/** The counters it feeds (the Prometheus metrics have this shape). */
export interface EmbeddingCounters {
  embeddingJobs: { inc(labels: { outcome: string }, value?: number): void };
  rateLimited: { inc(labels: { reason: string }): void };
}

/** Seconds a refused or timed-out client is told to wait. */
const RETRY_AFTER_S = 5;

/** Cuts texts into jobs of at most `maxInputs` texts and `maxChars` characters (a longer text alone). */
export function splitJobs(texts: string[], maxInputs: number, maxChars: number): Part<string[]>[] {
  const parts: Part<string[]>[] = [];
  let cur: string[] = [];
  let chars = 0;
  const flush = () => {
    if (cur.length === 0) return;
    parts.push({ input: cur, units: cur.length, weight: Math.min(1, Math.max(cur.length / maxInputs, chars / maxChars)) });
    cur = [];
    chars = 0;
  };
  for (const t of texts) {
    if (cur.length > 0 && (cur.length + 1 > maxInputs || chars + t.length > maxChars)) flush();
    cur.push(t);
    chars += t.length;
  }
  flush();
  return parts;
}

export class BuiltinEmbedder {
  private readonly local = new LocalEmbedder();
  private readonly scheduler: FairScheduler<string[], Float32Array[]>;

  constructor(
    private readonly config: EmbeddingsConfig,
    counters?: EmbeddingCounters,
  ) {
    this.scheduler = new FairScheduler(
      (jobs) => this.runBatch(jobs),
      {
        tenantUnits: config.tenantInputs,
        // One worker: two model calls at once would only take turns on the same cores.
        concurrency: 1,
        retryAfterS: RETRY_AFTER_S,
      },
      {
        jobs: (outcome: JobOutcome, n: number) => counters?.embeddingJobs.inc({ outcome }, n),
        refused: () => counters?.rateLimited.inc({ reason: "embedding_tenant_inputs" }),
      },
    );
  }

  /** Starts loading the model (in its worker); resolves when it is loaded. */
  load(): Promise<void> {
    return this.local.load();
  }

  /** Whether the model is loaded. */
  loaded(): boolean {
    return this.local.loaded();
  }

  /** Jobs waiting for the model, over all tenants. */
  queuedJobs(): number {
    return this.scheduler.queued();
  }

  /** Embeds a tenant's texts in its turn; fails when `signal` aborts or the deadline passes first. */
  async embed(tenant: string, texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const parts = splitJobs(texts, this.config.jobInputs, this.config.jobChars);
    const s = Math.round(this.config.timeoutMs / 1000);
    const deadlineError = () =>
      new ApiError(
        "at_capacity",
        `The embedding model could not embed this request's ${texts.length} inputs within ${s} s (it is shared with other requests); retry later or send fewer inputs`,
        RETRY_AFTER_S,
      );
    const done = await this.scheduler.submit(tenant, parts, { deadlineMs: this.config.timeoutMs, signal, deadlineError });
    return done.flat();
  }

  /** One model call for a batch of jobs; answers each job its own vectors. */
  private async runBatch(jobs: string[][]): Promise<Float32Array[][]> {
    const rows = await this.local.embed(jobs.flat());
    const out: Float32Array[][] = [];
    let at = 0;
    for (const job of jobs) {
      out.push(rows.slice(at, at + job.length));
      at += job.length;
    }
    return out;
  }

  close(): Promise<void> {
    return this.local.close();
  }
}
