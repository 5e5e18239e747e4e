// One running deployment: its replicas, the router in front of them and their autoscaler. To the
// gateway it is a Provider serving one model id (the deployment's name).
//
// Routing: a request goes to the ready replica with the fewest requests in flight that has a free
// slot (`parallel` per replica); otherwise it waits in the deployment's queue, which is bounded
// (full: 429 with Retry-After) and timed (too long: 503 with Retry-After). A request whose replica
// fails before answering (refused or reset connection, the process died mid-answer, a 5xx) is sent
// once more, to another ready replica or the restarted one; a stream is retried only if it failed
// before its first event. Scaling: a replica is added while requests queue and the replicas being
// started cannot take them, up to max_replicas; a replica idle for `idleMs` is retired, down to
// min_replicas.
import { ApiError } from "../errors.js";
import type {
  CompletionResult,
  EventBatches,
  ModelInfo,
  OutgoingRequest,
  OutgoingTextRequest,
  Provider,
  TextCompletion,
} from "../inference/types.js";
import type { DeploymentRow, DeploymentStatus } from "./store.js";
import { type Launch, Replica } from "./replica.js";

export interface DeploymentSettings {
  /** Requests one replica serves at once. */
  parallel: number;
  /** Requests that may wait for a replica, per deployment. */
  queueSize: number;
  /** Longest a request waits in the queue. */
  queueTimeoutMs: number;
  /** A replica with nothing to do for this long is retired (down to min_replicas). */
  idleMs: number;
  memoryMb: number;
  startTimeoutMs: number;
  healthIntervalMs: number;
  requestTimeoutMs: number;
  /** How long a deleted deployment's requests may take to finish before its replicas are killed. */
  drainMs: number;
}

interface Waiter {
  resolve: (r: Replica) => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout;
  signal: AbortSignal;
  onAbort: () => void;
}

export interface DeploymentHooks {
  /** The deployment's status changed (to store it). */
  onStatus: (d: Deployment) => void;
  log: (msg: string, extra?: Record<string, unknown>) => void;
  /** Something went wrong that the deployment handled (a replica died, a request was sent again). */
  warn: (msg: string, extra?: Record<string, unknown>) => void;
  /** Whether the host may run one more replica (above min_replicas; AGENTBOX_MAX_REPLICAS for all deployments). */
  canGrow: () => boolean;
}

/** Errors of a replica that say it (not the request) failed: the request may go to another one. */
function replicaFailed(err: unknown): boolean {
  return err instanceof ApiError && (err.code === "upstream_unavailable" || err.code === "upstream_error");
}

export class Deployment implements Provider {
  readonly type = "openai" as const;
  readonly replicas: Replica[] = [];
  private readonly queue: Waiter[] = [];
  private readonly created: number;
  private nextReplica = 0;
  private ticker: NodeJS.Timeout;
  private drained: (() => void) | undefined;

  constructor(
    readonly row: DeploymentRow,
    private readonly launch: (port: number) => Launch,
    readonly supportsTools: boolean,
    private readonly settings: DeploymentSettings,
    private readonly hooks: DeploymentHooks,
  ) {
    this.created = Math.floor(Date.parse(row.created_at) / 1000);
    // A deployment that failed (before a restart of the service) keeps its row and reason, without replicas.
    if (row.status !== "failed") for (let i = 0; i < row.min_replicas; i++) this.addReplica();
    this.ticker = setInterval(() => this.tick(), Math.max(100, Math.min(1000, settings.idleMs / 4)));
    this.ticker.unref();
  }

  get name(): string {
    return this.row.name;
  }

  get status(): DeploymentStatus {
    return this.row.status;
  }

  /** Requests waiting for a replica now. */
  get queued(): number {
    return this.queue.length;
  }

  models(): ModelInfo[] {
    return [{ id: this.row.name, object: "model", created: this.created, owned_by: "deployment" }];
  }

  serves(model: string): boolean {
    return model === this.row.name;
  }

  private setStatus(status: DeploymentStatus, reason: string | null): void {
    if (this.row.status === status && this.row.reason === reason) return;
    this.row.status = status;
    this.row.reason = reason;
    this.hooks.onStatus(this);
  }

  /** Replicas that count against the bounds (not stopping, not given up). */
  active(): Replica[] {
    return this.replicas.filter((r) => r.state === "ready" || r.state === "starting" || r.state === "restarting");
  }

  private addReplica(): void {
    const replica = new Replica({
      id: `${this.row.id}-r${this.nextReplica++}`,
      launch: this.launch,
      memoryMb: this.settings.memoryMb,
      startTimeoutMs: this.settings.startTimeoutMs,
      healthIntervalMs: this.settings.healthIntervalMs,
      requestTimeoutMs: this.settings.requestTimeoutMs,
      parallel: this.settings.parallel,
      failLimit: 3,
      onChange: (r) => this.onReplica(r),
      log: this.hooks.warn,
    });
    this.replicas.push(replica);
    this.hooks.log("replica added", { deployment: this.row.id, replica: replica.id, replicas: this.active().length });
  }

  private onReplica(r: Replica): void {
    if (r.state === "ready" && this.row.status === "creating") this.setStatus("running", null);
    if (r.state === "stopped") {
      const i = this.replicas.indexOf(r);
      if (i >= 0) this.replicas.splice(i, 1);
    }
    if (r.state === "failed") {
      const i = this.replicas.indexOf(r);
      if (i >= 0) this.replicas.splice(i, 1);
      if (this.row.status === "creating") {
        // Never served: the model, the command or the host is wrong. Starting more will not help.
        this.setStatus("failed", r.reason ?? "the replica failed to start");
        for (const other of this.replicas) void other.stop(0);
        this.rejectAll(new ApiError("upstream_unavailable", `Deployment '${this.row.name}' failed: ${this.row.reason}`, 30));
        return;
      }
      // It served before: keep the bounds with a fresh replica.
      if (this.row.status === "running" && this.active().length < this.row.min_replicas) this.addReplica();
    }
    this.dispatch();
  }

  /** Hands free replicas to waiting requests, oldest first. */
  private dispatch(): void {
    while (this.queue.length > 0) {
      const r = this.pick();
      if (!r) break;
      const w = this.queue.shift() as Waiter;
      clearTimeout(w.timer);
      w.signal.removeEventListener("abort", w.onAbort);
      r.inFlight++;
      w.resolve(r);
    }
    if (this.queue.length === 0 && this.drained && this.inFlight() === 0) this.drained();
  }

  /** The routable replica with the fewest requests in flight. */
  private pick(): Replica | undefined {
    let best: Replica | undefined;
    for (const r of this.replicas) if (r.routable && (!best || r.inFlight < best.inFlight)) best = r;
    return best;
  }

  private inFlight(): number {
    let n = 0;
    for (const r of this.replicas) n += r.inFlight;
    return n;
  }

  private acquire(signal: AbortSignal): Promise<Replica> {
    if (this.row.status === "failed")
      throw new ApiError("upstream_unavailable", `Deployment '${this.row.name}' failed: ${this.row.reason}`, 30);
    if (this.queue.length === 0) {
      const r = this.pick();
      if (r) {
        r.inFlight++;
        return Promise.resolve(r);
      }
    }
    if (this.queue.length >= this.settings.queueSize)
      throw new ApiError("rate_limited", `Deployment '${this.row.name}' has ${this.queue.length} requests waiting; retry shortly`, 1);
    const p = new Promise<Replica>((resolve, reject) => {
      const w: Waiter = {
        resolve,
        reject,
        signal,
        timer: setTimeout(() => {
          this.leave(w);
          reject(
            new ApiError(
              "at_capacity",
              `No replica of deployment '${this.row.name}' was free within ${this.settings.queueTimeoutMs} ms; retry shortly`,
              5,
            ),
          );
        }, this.settings.queueTimeoutMs),
        onAbort: () => {
          clearTimeout(w.timer);
          this.leave(w);
          reject(signal.reason);
        },
      };
      signal.addEventListener("abort", w.onAbort, { once: true });
      this.queue.push(w);
    });
    this.scaleUp();
    return p;
  }

  private leave(w: Waiter): void {
    const i = this.queue.indexOf(w);
    if (i >= 0) this.queue.splice(i, 1);
    w.signal.removeEventListener("abort", w.onAbort);
  }

  private rejectAll(err: ApiError): void {
    for (const w of this.queue.splice(0)) {
      clearTimeout(w.timer);
      w.signal.removeEventListener("abort", w.onAbort);
      w.reject(err);
    }
  }

  private release(r: Replica): void {
    r.inFlight--;
    r.lastActive = Date.now();
    this.dispatch();
  }

  /** Adds a replica when the queue is longer than what the replicas being started will take. */
  private scaleUp(): void {
    if (this.row.status === "failed" || this.row.status === "deleting") return;
    const active = this.active();
    const starting = active.filter((r) => r.state !== "ready").length;
    if (this.queue.length > starting * this.settings.parallel && active.length < this.row.max_replicas && this.hooks.canGrow())
      this.addReplica();
  }

  /** Retires one idle replica above min_replicas per tick; keeps min_replicas alive. */
  private tick(): void {
    if (this.row.status !== "running") return;
    const active = this.active();
    if (active.length < this.row.min_replicas) {
      this.addReplica();
      return;
    }
    if (this.queue.length > 0) {
      this.scaleUp();
      return;
    }
    if (active.length <= this.row.min_replicas) return;
    const now = Date.now();
    const idle = active.find((r) => r.state === "ready" && r.inFlight === 0 && now - r.lastActive >= this.settings.idleMs);
    if (idle) {
      this.hooks.log("replica idle: retiring it", { deployment: this.row.id, replica: idle.id });
      void idle.stop(this.settings.drainMs);
    }
  }

  /** Runs a request on a replica, sending it once more to another replica if its replica failed. */
  private async run<T>(signal: AbortSignal, call: (r: Replica) => Promise<T>, streamed: boolean): Promise<{ value: T; replica: Replica }> {
    for (let attempt = 0; ; attempt++) {
      const r = await this.acquire(signal);
      try {
        const value = await call(r);
        if (!streamed) this.release(r);
        return { value, replica: r };
      } catch (err) {
        const failed = replicaFailed(err);
        // Before its slot is freed: the replica must not be handed the next request unchecked.
        if (failed) r.suspect();
        this.release(r);
        if (attempt > 0 || signal.aborted || !failed) throw err;
        this.hooks.warn("replica failed a request: sending it to another", { deployment: this.row.id, replica: r.id });
      }
    }
  }

  async complete(req: OutgoingRequest, signal: AbortSignal): Promise<CompletionResult> {
    return (await this.run(signal, (r) => r.provider.complete(req, signal), false)).value;
  }

  async stream(req: OutgoingRequest, signal: AbortSignal): Promise<EventBatches> {
    const { value, replica } = await this.run(signal, (r) => r.provider.stream(req, signal), true);
    return this.releasing(value, replica);
  }

  async completeText(req: OutgoingTextRequest, signal: AbortSignal): Promise<{ json: TextCompletion; raw?: Buffer }> {
    return (await this.run(signal, (r) => textOf(r).completeText(req, signal), false)).value;
  }

  async streamText(req: OutgoingTextRequest, signal: AbortSignal): Promise<EventBatches> {
    const { value, replica } = await this.run(signal, (r) => textOf(r).streamText(req, signal), true);
    return this.releasing(value, replica);
  }

  /** A stream that frees its replica's slot when it ends, fails or is abandoned. */
  private async *releasing(batches: EventBatches, replica: Replica): AsyncGenerator<string[]> {
    try {
      yield* batches;
    } finally {
      this.release(replica);
    }
  }

  /** What GET /deployments/{id} shows of each replica. */
  replicaInfo(): Array<{ replica_id: string; state: string; pid: number | null; in_flight: number; restarts: number }> {
    return this.replicas.map((r) => ({
      replica_id: r.id,
      state: r.state,
      pid: r.pid ?? null,
      in_flight: r.inFlight,
      restarts: r.restarts,
    }));
  }

  /**
   * Deletion: the deployment takes no new requests (the service stops resolving it), lets queued and
   * running ones finish (up to drainMs), then stops its replicas.
   */
  async drain(): Promise<void> {
    this.setStatus("deleting", null);
    if (this.queue.length > 0 || this.inFlight() > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.settings.drainMs);
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    await this.close();
  }

  /** Stops every replica now (service shutdown, or the end of a drain). */
  async close(): Promise<void> {
    clearInterval(this.ticker);
    this.rejectAll(new ApiError("upstream_unavailable", `Deployment '${this.row.name}' is shutting down`, 5));
    await Promise.all([...this.replicas].map((r) => r.stop(5000)));
  }
}

/** A replica's client with text completions (the replica serves /v1/completions; the client must speak it). */
function textOf(r: Replica): Required<Pick<Provider, "completeText" | "streamText">> {
  const p = r.provider as Provider;
  if (!p.completeText || !p.streamText)
    throw new ApiError("invalid_request", "Text completions are not available through deployments yet; use /chat/completions");
  return { completeText: p.completeText.bind(p), streamText: p.streamText.bind(p) };
}
