// One index's in-memory side on the main thread: a copy of every live vector (for exact scoring of
// small filtered sets and of vectors not yet in the graph) and its metadata for filters, each in a
// slot that is reused once its vector is deleted or replaced (labels never are: a label-indexed
// copy would grow with every replacement, however few vectors are live).
// The HNSW graph itself lives in the graph worker (graph-worker.ts). Writes land here at once;
// vectors join the graph from a queue, a chunk at a time, so a large upsert never stalls other
// requests. Until then they are scored exactly, so the next search sees every acknowledged write;
// the queue is bounded (room(): past the bound a write waits for the graph), which bounds that cost.
// While the index's records load, writes are kept and applied after them; while its graph loads or
// is rebuilt, every search is exact (SIMD brute force, exact.ts), and so is a small index's while
// the graph worker is busy with another index's long work (its graph loading, say).
import type { Hit, Metric } from "./engine.js";
import { exactNearest } from "./exact.js";
import { ExactScanner } from "./exact-scan.js";
import type { Metadata, Predicate } from "./filter.js";
import type { GraphParams, GraphWorker } from "./graph-worker.js";
import { measureRecall, type RecallCurve } from "./recall.js";
import { VECTOR_DEFAULTS } from "./settings.js";
import type { VectorSlots } from "./vector-file.js";

/** HNSW parameters, measured on the benchmark's clustered 1M x 128 set (docs/design.md). */
const CONNECTIVITY = 32;
const EXPANSION_ADD = 128;
/** The graph keeps vectors as bfloat16: half the memory of 32-bit floats, faster distances than
 * IEEE half floats (measured: 0.18 vs 0.31 ms a search on 100k x 128) and the full float range (no
 * overflow to clamp). Each search asks for a few more candidates than top_k and scores them
 * exactly from the 32-bit copy here, so scores and their order are exact. */
export const QUANTIZATION = "bf16";
/** Candidates beyond top_k that an unfiltered search scores exactly: what bfloat16's coarser
 * distances may have ranked just below the true top_k (measured: recall@10 0.976 asking for 10,
 * 0.990 asking for 16, with the same search width). */
export const RESCORE_EXTRA = 8;
/** The graph's own minimum search width: each search asks for its width in candidates (usearch
 * walks max(this, candidates asked)), so the width can change per search and per index. */
const GRAPH_MIN_EF = 16;
/** An index of at most this many floats (vectors × dimension: 16 MiB, 32,768 vectors of 128
 * dimensions) is searched exactly while the graph worker is busy with another index's long work (a
 * graph loaded from its file or saved, a rebuild's insertions: seconds at a million vectors),
 * instead of waiting behind it: one SIMD pass over it takes a few milliseconds. */
const EXACT_WHEN_BUSY_FLOATS = 1 << 22;
/** Below this many vectors exact scoring is cheaper than a gather into one buffer. */
const GATHER_MIN = 64;
/** Graphs smaller than this are not measured (their searches walk most of them anyway). */
const MEASURE_MIN = 1_000;
/** A measurement starts once the index had no write for this long (see maybeMeasure). */
const MEASURE_QUIET_MS = 1_000;
/** A graph is measured again once its size changed by this share since the last measurement. */
const REMEASURE_GROWTH = 0.1;
/** A filtered search scores the matching vectors exactly when there are at most this many. */
const EXACT_MAX = 5_000;
/** While the graph is rebuilt or loaded (every search exact meanwhile), vectors join it in
 * messages of this many, two queued in the worker at a time. */
const REBUILD_CHUNK = 512;
const REBUILD_IN_FLIGHT = 2;
/** Otherwise a search waits in the worker behind at most the insertion under way and one queued,
 * so each insertion is sized to take about this long (from the last one's measured time). */
const CHUNK_MS = 3;
const CHUNK_MIN = 8;
const CHUNK_MAX = 512;
const ADD_IN_FLIGHT = 2;
/** While writes keep arriving and few vectors wait, the graph pauses between chunks so a bulk
 * load is acknowledged at the speed of the store and its CPU goes to the load and the searches;
 * the waiting vectors are scored exactly meanwhile. Past half of `maxUnindexed` it goes on without
 * pauses, and at `maxUnindexed` upserts wait for it (see room()). */
const BUSY_WINDOW_MS = 100;
const BUSY_PAUSE_MS = 10;
/** Exact scoring gathers vectors into a buffer kept from one search to the next up to this many
 * floats (64 MiB); a larger gather (a broad filter's last resort) gets a buffer of its own. */
const SCRATCH_MAX = 16 * 2 ** 20;
/** The queue's mirror (`queued`) holds at most this many floats (64 MiB; the default bound on
 * vectors waiting for the graph is 8 MiB). */
const QUEUED_MAX = 16 * 2 ** 20;
/** A mirror larger than this (4 MiB) is let go when the queue empties. */
const QUEUED_KEEP = 2 ** 20;
/** Sent entries at the head of the queue are cut off once there are more than this many and more
 * than a quarter of those still waiting: a search scores the sent rows too (and skips them). */
const QUEUE_COMPACT_MIN = 1024;
/** Every insertion uses the same thread count: usearch sizes its per-thread contexts only when it
 * grows, so an insertion with more threads than the last growth reserved corrupts the graph
 * (measured: recall@10 0.43 on 20k vectors when thin one-thread chunks came first). */
const ADD_THREADS = 2;

/** A scored vector: its slot here and the label it had when scored (the slot may be reused meanwhile). */
type Candidate = { slot: number; label: number; dist: number };

export class Collection {
  // By slot:
  private vecs: Float32Array;
  private norms: Float32Array;
  private labels: Float64Array;
  private ids: Array<string | undefined> = [];
  private metas: Array<Metadata | undefined> = [];
  private live: Uint8Array;
  /** 1 once the vector was sent to the graph (the worker applies messages in order). */
  private inAnn: Uint8Array;
  private capacity: number;
  /** The slot of each live label, slots freed by drops, and the slots ever used. */
  private readonly slotOf = new Map<number, number>();
  private free: number[] = [];
  private used = 0;
  /** Slots waiting to join the graph, oldest first, with their labels (a slot reused since is
   * skipped) and their write sequence numbers. */
  private pending: number[] = [];
  private pendingLabel: number[] = [];
  private pendingSeq: number[] = [];
  private pendingHead = 0;
  /** The queued vectors again, row i for pending entry i, from the start of the buffer (where the
   * native scorer reads): a search scores the queue in one SIMD pass where it lies, instead of
   * gathering it into a buffer first (that copy and the walk over the queue were a third of the
   * event loop's time during a bulk load). Only while `mirrored`. */
  private queued = new Float32Array(0);
  /** Whether `queued` holds every pending entry: not after a rebuild queued every vector, nor once
   * the queue outgrew QUEUED_MAX (a restart's records without a graph), until the queue empties. */
  private mirrored = true;
  private inFlight = 0;
  /** The slots of each insertion sent to the graph and not yet acknowledged, with their labels then:
   * the worker may answer a search between its slices (graph-worker-main.ts), so a search scores
   * these exactly too. */
  private sent = new Set<{ slots: number[]; labels: number[] }>();
  /** Set once loading is over: only then are vectors sent to the graph. */
  private indexing = false;
  private closed = false;
  /** Vectors the graph holds (sent, not removed). */
  private annCount = 0;
  liveCount = 0;
  /** Highest write sequence applied here. */
  seq = 0;
  /** Whether the graph changed since it was last saved. */
  dirty = false;
  private lastWrite = 0;
  /** When a write or delete last changed what the graph must hold, and when it was last saved. */
  changedAt = 0;
  savedAt = performance.now();
  /** While writes keep arriving, the graph pauses between chunks until then. */
  private resumeAt = 0;
  /** Vectors that may wait for the graph before upserts wait for it (room()). */
  maxUnindexed = Number.POSITIVE_INFINITY;
  /** Upserts waiting for room. */
  private roomWaiters: Array<() => void> = [];
  /** What the last insertion took per vector in the worker (sizes the next chunk). */
  private addMsPerVector = 0.25;
  /** Exact scoring's gather buffer, kept between searches (no allocation per search). */
  private scratch = new Float32Array(0);
  /** While the records load: writes applied here after them (see put). */
  private replay: Array<() => void> | undefined;
  /** False while the saved graph is loading in the worker. */
  graphOpen = true;
  /** True while the graph is rebuilt from every vector (until the queue first empties). */
  rebuilding = false;
  /** Candidates an unfiltered graph search walks (adapted to `targetRecall` by measuring). */
  width = VECTOR_DEFAULTS.searchEf;
  /** recall@10 wanted from the graph (the width is chosen to reach it). */
  targetRecall = VECTOR_DEFAULTS.targetRecall;
  /** Last measurement: recall@10 at `width`, and at each width tried. */
  recall: RecallCurve | undefined;
  private measuring: Promise<void> | undefined;
  private retryMeasure: NodeJS.Timeout | undefined;
  /** Settles once the records are loaded (rejects when loading failed): searches wait for this
   * only, not for the graph (they are exact until it is in use). */
  recordsLoaded: Promise<void> = Promise.resolve();
  private settleRecords: { resolve: () => void; reject: (err: Error) => void } | undefined;
  /** Called after a measurement changed the width (the engine saves it with the graph). */
  onMeasured: () => void = () => {};

  constructor(
    readonly dim: number,
    readonly metric: Metric,
    private readonly graphs: GraphWorker,
    /** The graph's name in the worker: the index id and which copy of the index this is (see EmbeddedEngine.forget). */
    readonly graphId: string,
    private readonly log: (msg: string, fields?: Record<string, unknown>) => void = () => {},
    /** Vectors expected (sized once when loading, instead of doubling through a large index). */
    expected = 0,
    /** The thread that computes the exact answers when recall is measured (one per service). */
    private readonly scans: ExactScanner = new ExactScanner(),
  ) {
    // Small to start: an empty index of 2,000 dimensions would otherwise take 8 MiB at once.
    this.capacity = Math.max(64, expected);
    this.vecs = new Float32Array(this.capacity * dim);
    this.norms = new Float32Array(this.capacity);
    this.labels = new Float64Array(this.capacity);
    this.live = new Uint8Array(this.capacity);
    this.inAnn = new Uint8Array(this.capacity);
  }

  private params(): GraphParams {
    return {
      dim: this.dim,
      metric: this.metric,
      connectivity: CONNECTIVITY,
      expansionAdd: EXPANSION_ADD,
      expansionSearch: GRAPH_MIN_EF,
      quantization: QUANTIZATION,
    };
  }

  /** Creates the graph in the worker, loaded from a saved file when given; resolves to its size. */
  openGraph(file?: string): Promise<number> {
    return this.graphs.open(this.graphId, this.params(), file);
  }

  private grow(slot: number): void {
    if (slot < this.capacity) return;
    let cap = this.capacity;
    while (cap <= slot) cap *= 2;
    const vecs = new Float32Array(cap * this.dim);
    vecs.set(this.vecs);
    const norms = new Float32Array(cap);
    norms.set(this.norms);
    const labels = new Float64Array(cap);
    labels.set(this.labels);
    const live = new Uint8Array(cap);
    live.set(this.live);
    const inAnn = new Uint8Array(cap);
    inAnn.set(this.inAnn);
    this.vecs = vecs;
    this.norms = norms;
    this.labels = labels;
    this.live = live;
    this.inAnn = inAnn;
    this.capacity = cap;
  }

  /** Slots in use or freed (the range every scan walks). */
  slotsUsed(): number {
    return this.used;
  }

  /** From now until endLoad, writes (put, drop, setMetadata) wait; the loader uses load(). */
  beginLoad(): void {
    this.replay = [];
    this.recordsLoaded = new Promise<void>((resolve, reject) => {
      this.settleRecords = { resolve, reject };
    });
    this.recordsLoaded.catch(() => {});
  }

  /** Loading stopped before every record was read: searches waiting for them fail. */
  failLoad(err: Error): void {
    this.settleRecords?.reject(err);
    this.settleRecords = undefined;
  }

  /** Whether the records are still loading. */
  get loading(): boolean {
    return this.replay !== undefined;
  }

  /** Applies the writes made while loading (the loader may have read some of them already). */
  endLoad(): void {
    const ops = this.replay ?? [];
    this.replay = undefined;
    for (const op of ops) op();
    this.settleRecords?.resolve();
    this.settleRecords = undefined;
  }

  /** Whether every search is exact now (the graph is loading or being rebuilt). */
  get building(): boolean {
    return !this.graphOpen || this.rebuilding;
  }

  /** Records a vector under its label (a write; kept for later while the records load). */
  put(label: number, id: string, embedding: Float32Array, metadata: Metadata, seq: number, inGraph: boolean): void {
    // Labels are never reused: one the loader already read is the same version.
    if (this.replay) this.replay.push(() => this.slotOf.has(label) || this.load(label, id, embedding, metadata, seq, inGraph));
    else this.load(label, id, embedding, metadata, seq, inGraph);
  }

  /** Records a vector as read from the store; `inGraph` when a loaded graph already holds it. */
  load(label: number, id: string, embedding: Float32Array, metadata: Metadata, seq: number, inGraph: boolean): void {
    let slot = this.slotOf.get(label);
    if (slot === undefined) {
      slot = this.free.pop() ?? this.used++;
      this.grow(slot);
      this.slotOf.set(label, slot);
      this.labels[slot] = label;
      this.liveCount++;
    }
    this.vecs.set(embedding, slot * this.dim);
    let n = 0;
    for (let i = 0; i < embedding.length; i++) n += (embedding[i] as number) * (embedding[i] as number);
    this.norms[slot] = Math.sqrt(n);
    this.ids[slot] = id;
    this.metas[slot] = metadata;
    this.live[slot] = 1;
    if (seq > this.seq) this.seq = seq;
    if (inGraph) {
      this.inAnn[slot] = 1;
      this.annCount++;
    } else {
      this.lastWrite = performance.now();
      this.changedAt = this.lastWrite;
      this.pending.push(slot);
      this.pendingLabel.push(label);
      this.pendingSeq.push(seq);
      if (this.mirrored) this.mirror(embedding);
      this.scheduleDrain();
    }
  }

  /** Copies the vector just queued into its row of `queued` (or stops mirroring past QUEUED_MAX). */
  private mirror(embedding: Float32Array): void {
    const row = this.pending.length - 1;
    const need = (row + 1) * this.dim;
    if (need > this.queued.length) {
      if (need > QUEUED_MAX) {
        this.mirrored = false;
        this.queued = new Float32Array(0);
        return;
      }
      const grown = new Float32Array(Math.min(QUEUED_MAX, Math.max(need, this.queued.length * 2, 64 * this.dim)));
      grown.set(this.queued.subarray(0, row * this.dim));
      this.queued = grown;
    }
    this.queued.set(embedding, row * this.dim);
  }

  /** Removes a label (a deleted vector or a replaced version); its slot is free for the next put. */
  drop(label: number, seq: number): void {
    if (this.replay) {
      this.replay.push(() => this.drop(label, seq));
      return;
    }
    this.changedAt = performance.now();
    if (seq > this.seq) this.seq = seq;
    const slot = this.slotOf.get(label);
    if (slot === undefined) return;
    this.slotOf.delete(label);
    this.live[slot] = 0;
    this.liveCount--;
    this.ids[slot] = undefined;
    this.metas[slot] = undefined;
    if (this.inAnn[slot]) {
      this.inAnn[slot] = 0;
      this.annCount--;
      this.dirty = true;
      this.graphs.remove(this.graphId, new BigUint64Array([BigInt(label)])).catch((err) => this.failed(err));
    }
    this.free.push(slot);
  }

  /** Whether a pending entry still stands for a vector waiting for the graph (its slot was not reused). */
  private waiting(i: number): boolean {
    const s = this.pending[i] as number;
    return this.live[s] === 1 && this.inAnn[s] === 0 && this.labels[s] === this.pendingLabel[i];
  }

  /** Live vectors sent to the graph (or held by it as loaded), less those removed since. */
  get graphCount(): number {
    return this.annCount;
  }

  /** Removes labels only a loaded graph holds (replayed tombstones); resolves to the graph's size. */
  removeFromGraph(labels: number[]): Promise<number> {
    if (labels.length > 0) this.dirty = true;
    return this.graphs.remove(
      this.graphId,
      BigUint64Array.from(labels, (l) => BigInt(l)),
    );
  }

  setMetadata(label: number, metadata: Metadata): void {
    if (this.replay) {
      this.replay.push(() => this.setMetadata(label, metadata));
      return;
    }
    const slot = this.slotOf.get(label);
    if (slot !== undefined) this.metas[slot] = metadata;
  }

  /** Every slot as it is now, for the index's vectors file (vector-file.ts): labels and ids are
   * copied, the vectors are this collection's own array (valid while `seq` stays the same). */
  slotsSnapshot(): VectorSlots {
    const labels = new Float64Array(this.used);
    for (let s = 0; s < this.used; s++) labels[s] = this.live[s] ? (this.labels[s] as number) : -1;
    return {
      dim: this.dim,
      upTo: this.seq,
      slots: this.used,
      live: this.liveCount,
      vecs: this.vecs,
      labels,
      ids: Array.from({ length: this.used }, (_, s) => (this.live[s] ? this.ids[s] : undefined)),
    };
  }

  /** The write sequence up to which every vector has been sent to the graph (for saving). */
  graphState(): { upTo: number } {
    return { upTo: this.pendingHead < this.pending.length ? (this.pendingSeq[this.pendingHead] as number) - 1 : this.seq };
  }

  pendingCount(): number {
    return this.pending.length - this.pendingHead;
  }

  /** Replaces the graph with an empty one: every live vector is queued to be inserted again. */
  async rebuildGraph(): Promise<void> {
    await this.graphs.drop(this.graphId);
    await this.openGraph();
    const slots: number[] = [];
    for (let s = 0; s < this.used; s++) {
      if (this.live[s]) {
        this.inAnn[s] = 0;
        slots.push(s);
      }
    }
    this.annCount = 0;
    this.pending = slots;
    this.pendingLabel = slots.map((s) => this.labels[s] as number);
    this.pendingSeq = slots.map(() => 0);
    this.pendingHead = 0;
    this.mirrored = false;
    this.queued = new Float32Array(0);
    this.dirty = true;
    this.scheduleDrain();
  }

  /** Starts sending queued vectors to the graph (after loading). */
  startIndexing(): void {
    this.indexing = true;
    this.scheduleDrain();
  }

  /** Sends every queued vector to the graph and waits for them (before saving on shutdown). */
  async drainAll(): Promise<void> {
    this.indexing = false;
    while (this.pendingCount() > 0) await this.sendChunk(REBUILD_CHUNK * 8, ADD_THREADS);
    this.wakeWriters();
  }

  private failed(err: unknown): void {
    this.log("vector graph operation failed", { index: this.graphId, error: String(err) });
  }

  /** Whether an upsert may go ahead: fewer than `maxUnindexed` vectors wait for the graph, or the
   * graph is not being fed (loading, rebuilding: searches are exact then anyway). */
  private hasRoom(): boolean {
    return this.closed || !this.indexing || this.building || this.loading || this.pendingCount() < this.maxUnindexed;
  }

  /** Resolves once the index has room for more vectors waiting for the graph (at once, mostly).
   * Every search scores the waiting vectors exactly: this bounds what that costs during a bulk
   * load, whose upserts are then acknowledged at the speed the graph is built. */
  room(): Promise<void> {
    if (this.hasRoom()) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  private wakeWriters(): void {
    if (this.roomWaiters.length === 0 || !this.hasRoom()) return;
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const w of waiters) w();
  }

  private scheduleDrain(): void {
    if (!this.indexing || this.closed || performance.now() < this.resumeAt) return;
    const rebuild = this.building;
    const paced = !rebuild && performance.now() - this.lastWrite < BUSY_WINDOW_MS && this.pendingCount() < this.maxUnindexed / 2;
    const maxInFlight = rebuild ? REBUILD_IN_FLIGHT : paced ? 1 : ADD_IN_FLIGHT;
    const size = rebuild ? REBUILD_CHUNK : Math.max(CHUNK_MIN, Math.min(CHUNK_MAX, Math.round(CHUNK_MS / this.addMsPerVector)));
    while (this.inFlight < maxInFlight && this.pendingCount() > 0) {
      this.inFlight++;
      this.sendChunk(size, ADD_THREADS)
        .catch((err) => this.failed(err))
        .finally(() => {
          this.inFlight--;
          if (this.pendingCount() === 0) {
            this.rebuilding = false;
            this.maybeMeasure();
          }
          this.wakeWriters();
          if (paced) {
            this.resumeAt = performance.now() + BUSY_PAUSE_MS;
            setTimeout(() => {
              // (Timers can fire a little before performance.now() reaches resumeAt.)
              this.resumeAt = 0;
              this.scheduleDrain();
            }, BUSY_PAUSE_MS).unref();
          } else {
            this.scheduleDrain();
          }
        });
    }
  }

  /** Sends the next queued vectors to the graph; resolves once the worker inserted them. */
  private sendChunk(max: number, threads: number): Promise<void> {
    const take: number[] = [];
    while (take.length < max && this.pendingHead < this.pending.length) {
      if (this.waiting(this.pendingHead)) take.push(this.pending[this.pendingHead] as number);
      this.pendingHead++;
    }
    const head = this.pendingHead;
    if (head >= this.pending.length) {
      this.pending = [];
      this.pendingLabel = [];
      this.pendingSeq = [];
      this.pendingHead = 0;
      this.mirrored = true;
      if (this.queued.length > QUEUED_KEEP) this.queued = new Float32Array(0);
    } else if (head > 65_536 || (this.mirrored && head > Math.max(QUEUE_COMPACT_MIN, (this.pending.length - head) / 4))) {
      if (this.mirrored) this.queued.copyWithin(0, head * this.dim, this.pending.length * this.dim);
      this.pending = this.pending.slice(head);
      this.pendingLabel = this.pendingLabel.slice(head);
      this.pendingSeq = this.pendingSeq.slice(head);
      this.pendingHead = 0;
    }
    if (take.length === 0) return Promise.resolve();
    const keys = new BigUint64Array(take.length);
    const data = new Float32Array(take.length * this.dim);
    const cosine = this.metric === "cosine";
    take.forEach((s, i) => {
      keys[i] = BigInt(this.labels[s] as number);
      const v = this.vecs.subarray(s * this.dim, (s + 1) * this.dim);
      // Cosine ignores length: the graph holds unit vectors (and unit queries, see annSearch).
      const n = this.norms[s] as number;
      if (cosine && n > 0) for (let j = 0; j < this.dim; j++) data[i * this.dim + j] = (v[j] as number) / n;
      else data.set(v, i * this.dim);
      this.inAnn[s] = 1;
    });
    this.annCount += take.length;
    this.dirty = true;
    const sent = { slots: take, labels: take.map((s) => this.labels[s] as number) };
    this.sent.add(sent);
    return this.graphs
      .add(this.graphId, keys, data, threads)
      .then(({ ms }) => {
        this.addMsPerVector = Math.max(0.001, ms / take.length);
      })
      .finally(() => this.sent.delete(sent));
  }

  /** The metric's distance (lower is nearer), the same as the graph computes. */
  private distance(q: Float32Array, qNorm: number, slot: number): number {
    const off = slot * this.dim;
    const v = this.vecs;
    if (this.metric === "euclidean") {
      let s = 0;
      for (let i = 0; i < q.length; i++) {
        const d = (q[i] as number) - (v[off + i] as number);
        s += d * d;
      }
      return s;
    }
    let dot = 0;
    for (let i = 0; i < q.length; i++) dot += (q[i] as number) * (v[off + i] as number);
    if (this.metric === "dotproduct") return 1 - dot;
    const denom = qNorm * (this.norms[slot] as number);
    return denom === 0 ? 1 : 1 - dot / denom;
  }

  /** Score as the API reports it: cosine similarity, dot product, or Euclidean distance. */
  private score(dist: number): number {
    return this.metric === "euclidean" ? Math.sqrt(Math.max(0, dist)) : 1 - dist;
  }

  private candidate(q: Float32Array, qNorm: number, s: number): Candidate {
    return { slot: s, label: this.labels[s] as number, dist: this.distance(q, qNorm, s) };
  }

  /** The `k` nearest of these slots, scored exactly (SIMD over a gathered copy when many). */
  private exact(q: Float32Array, qNorm: number, slots: number[], k: number, out: Candidate[]): void {
    if (slots.length <= Math.max(GATHER_MIN, k)) {
      for (const s of slots) out.push(this.candidate(q, qNorm, s));
      return;
    }
    const d = this.dim;
    const data = this.gatherBuffer(slots.length * d);
    slots.forEach((s, i) => {
      data.set(this.vecs.subarray(s * d, (s + 1) * d), i * d);
    });
    for (const r of exactNearest(data, d, q, k, this.metric)) out.push(this.candidate(q, qNorm, slots[r] as number));
  }

  /** The `k` nearest of the `count` vectors waiting for the graph, which lie in slots `lo`..`hi`
   * with few others among them (a bulk load's fill new slots one after another): the range is
   * copied in one piece and scored in one SIMD pass, asking for as many more as there are other
   * slots in it. A gather slot by slot took 12.5 ms p50 a search on a busy machine during a bulk
   * load, longer than the graph search. */
  private exactRange(q: Float32Array, qNorm: number, lo: number, hi: number, count: number, k: number, out: Candidate[]): void {
    const d = this.dim;
    const data = this.gatherBuffer((hi - lo + 1) * d);
    data.set(this.vecs.subarray(lo * d, (hi + 1) * d));
    let kept = 0;
    for (const r of exactNearest(data, d, q, k + (hi - lo + 1 - count), this.metric)) {
      const s = lo + r;
      if (this.live[s] !== 1 || this.inAnn[s] !== 0) continue;
      out.push(this.candidate(q, qNorm, s));
      if (++kept === k) break;
    }
  }

  /** The `k` nearest of the vectors waiting for the graph, scored in one SIMD pass over `queued`
   * (mirrored); rows that no longer wait (sent to the graph, or deleted or replaced since) are
   * skipped, and when they took the place of too many waiting ones it asks again for more (exact
   * either way: k waiting rows among the nearest asked are the k nearest waiting). */
  private exactQueued(q: Float32Array, qNorm: number, k: number, out: Candidate[]): void {
    const rows = this.pending.length;
    const head = this.pendingHead;
    if (rows === head) return;
    const data = this.queued.subarray(0, rows * this.dim);
    // The rows sent already are few (trimmed past 1,024 and a quarter of the rest, see sendChunk)
    // and lie anywhere in distance order: twice k and a margin are enough nearly always. (Asking k + head
    // kept a top list of thousands in the native pass and converted as many keys a search.)
    for (let ask = Math.min(rows, 2 * k + 16); ; ask = Math.min(rows, ask * 4)) {
      const found: Candidate[] = [];
      for (const r of exactNearest(data, this.dim, q, ask, this.metric)) {
        if (r < head || !this.waiting(r)) continue;
        found.push(this.candidate(q, qNorm, this.pending[r] as number));
        if (found.length === k) break;
      }
      if (found.length === k || ask >= rows) {
        for (const c of found) out.push(c);
        return;
      }
    }
  }

  /** The `k` nearest (matching `pred` when given) of the vectors sent to the graph whose insertion
   * is not acknowledged yet: the graph may answer before it inserted them. (Those inserted by then
   * are found both ways; the search keeps one.) */
  private exactSent(q: Float32Array, qNorm: number, k: number, pred: Predicate | undefined, out: Candidate[]): void {
    if (this.sent.size === 0) return;
    const slots: number[] = [];
    for (const chunk of this.sent) {
      chunk.slots.forEach((s, i) => {
        if (this.live[s] === 1 && this.labels[s] === chunk.labels[i] && (!pred || pred(this.metas[s]))) slots.push(s);
      });
    }
    this.exact(q, qNorm, slots, k, out);
  }

  /** A buffer of `floats` at offset 0 (the native scorer reads from the start of the buffer). */
  private gatherBuffer(floats: number): Float32Array {
    if (floats > SCRATCH_MAX) return new Float32Array(floats);
    if (this.scratch.length < floats) this.scratch = new Float32Array(Math.min(SCRATCH_MAX, Math.max(floats, this.scratch.length * 2)));
    return this.scratch.subarray(0, floats);
  }

  /** The `k` nearest live vectors (matching `pred` when given), scored exactly: no graph. */
  private exactAll(q: Float32Array, qNorm: number, k: number, pred: Predicate | undefined, out: Candidate[]): void {
    if (pred) {
      const slots: number[] = [];
      for (let s = 0; s < this.used; s++) if (this.live[s] && pred(this.metas[s])) slots.push(s);
      this.exact(q, qNorm, slots, k, out);
      return;
    }
    // Every slot in one SIMD pass, asking for as many more as there are free slots (their stale
    // vectors are skipped).
    const freeSlots = this.used - this.liveCount;
    const rows = exactNearest(this.vecs.subarray(0, this.used * this.dim), this.dim, q, k + freeSlots, this.metric);
    for (const s of rows) if (this.live[s]) out.push(this.candidate(q, qNorm, s));
  }

  private async annSearch(q: Float32Array, qNorm: number, k: number): Promise<Candidate[]> {
    // The graph holds unit vectors for cosine (see sendChunk); the query is scaled the same way.
    const gq = this.metric === "cosine" && qNorm > 0 ? q.map((x) => x / qNorm) : q;
    const m = await this.graphs.search(this.graphId, gq, k);
    const out: Candidate[] = [];
    for (let i = 0; i < m.keys.length; i++) {
      const l = Number(m.keys[i]);
      // A vector deleted while the search was in the worker is left out.
      const s = this.slotOf.get(l);
      if (s !== undefined) out.push({ slot: s, label: l, dist: this.distance(q, qNorm, s) });
    }
    return out;
  }

  /** The share of the graph's vectors that match, estimated from a sample. */
  private matchShare(pred: Predicate): number {
    const n = this.used;
    const tries = 512;
    let seen = 0;
    let hit = 0;
    let x = (n * 2654435761) >>> 0;
    for (let i = 0; i < tries * 4 && seen < tries; i++) {
      x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
      const s = x % n;
      if (!this.inAnn[s]) continue;
      seen++;
      if (pred(this.metas[s])) hit++;
    }
    return seen >= 64 ? hit / seen : 1;
  }

  /** Labels in the graph that match, when there are few enough to score exactly; otherwise undefined. */
  private smallMatchSet(pred: Predicate, share: number): number[] | undefined {
    if (this.annCount > EXACT_MAX && share * this.annCount > EXACT_MAX * 2) return undefined;
    const out: number[] = [];
    for (let s = 0; s < this.used; s++) {
      if (this.inAnn[s] && this.live[s] && pred(this.metas[s])) {
        out.push(s);
        if (out.length > EXACT_MAX) return undefined;
      }
    }
    return out;
  }

  /** Nearest first. `exact` scores every vector (no graph); `width` overrides the index's search width. */
  async search(
    query: Float32Array,
    topK: number,
    pred: Predicate | undefined,
    values: boolean,
    metadata: boolean,
    how: { exact?: boolean; width?: number } = {},
  ): Promise<Hit[]> {
    const qNorm = norm(query);
    const cands: Candidate[] = [];
    const graphSize = this.annCount;
    const exact =
      how.exact || this.building || (this.used * this.dim <= EXACT_WHEN_BUSY_FLOATS && this.graphs.busyWithOthers?.(this.graphId) === true);
    if (exact) {
      this.exactAll(query, qNorm, topK, pred, cands);
    } else if (!pred && this.mirrored) {
      // Vectors not yet in the graph: scored exactly.
      this.exactQueued(query, qNorm, topK, cands);
    } else {
      const waiting: number[] = [];
      let lo = Number.POSITIVE_INFINITY;
      let hi = -1;
      for (let i = this.pendingHead; i < this.pending.length; i++) {
        const s = this.pending[i] as number;
        if (this.waiting(i) && (!pred || pred(this.metas[s]))) {
          waiting.push(s);
          if (s < lo) lo = s;
          if (s > hi) hi = s;
        }
      }
      if (!pred && waiting.length > Math.max(GATHER_MIN, topK) && hi - lo + 1 <= waiting.length * 2)
        this.exactRange(query, qNorm, lo, hi, waiting.length, topK, cands);
      else this.exact(query, qNorm, waiting, topK, cands);
    }
    if (graphSize > 0 && !exact) {
      this.exactSent(query, qNorm, topK, pred, cands);
      if (!pred) {
        // The graph walks `width` candidates and they are rescored exactly here (at least topK +
        // RESCORE_EXTRA, what bfloat16's coarser distances may misorder).
        const k = Math.min(Math.max(topK + RESCORE_EXTRA, how.width ?? this.width), graphSize);
        for (const c of await this.annSearch(query, qNorm, k)) cands.push(c);
      } else {
        const share = this.annCount > EXACT_MAX ? this.matchShare(pred) : 1;
        const small = this.smallMatchSet(pred, share);
        if (small) {
          this.exact(query, qNorm, small, topK, cands);
        } else {
          // A broad filter: a graph search wide enough that top_k of what it walks should match
          // (three times the estimate), widened until they do; the filter is applied to the
          // candidates before cutting to top_k.
          let k = Math.min(graphSize, Math.max(how.width ?? this.width, Math.ceil((topK / Math.max(share, 1e-3)) * 3) + 64));
          for (;;) {
            const found = (await this.annSearch(query, qNorm, k)).filter((c) => pred(this.metas[c.slot]));
            if (found.length >= topK || k >= graphSize) {
              for (const c of found) cands.push(c);
              break;
            }
            if (k >= 16_384) {
              // Still too few: score every match exactly.
              const all: number[] = [];
              for (let s = 0; s < this.used; s++) if (this.inAnn[s] && this.live[s] && pred(this.metas[s])) all.push(s);
              this.exact(query, qNorm, all, topK, cands);
              break;
            }
            k = Math.min(graphSize, k * 4);
          }
        }
      }
    }
    cands.sort((a, b) => a.dist - b.dist);
    const hits: Hit[] = [];
    const seen = new Set<number>();
    for (const c of cands) {
      if (hits.length >= topK) break;
      // A vector sent to the graph while the search was under way can be found both ways; one
      // deleted meanwhile is left out (its slot may hold another vector by now).
      if (seen.has(c.label) || this.slotOf.get(c.label) !== c.slot) continue;
      seen.add(c.label);
      const hit: Hit = { id: this.ids[c.slot] as string, score: this.score(c.dist) };
      if (values) hit.values = Array.from(this.vecs.subarray(c.slot * this.dim, (c.slot + 1) * this.dim));
      if (metadata) hit.metadata = this.metas[c.slot] ?? {};
      hits.push(hit);
    }
    return hits;
  }

  /** Measures recall (unless one runs or the graph is too small or unchanged); not awaited. */
  maybeMeasure(force = false): Promise<void> {
    if (this.measuring || this.closed || this.building || this.annCount < MEASURE_MIN) return this.measuring ?? Promise.resolve();
    const last = this.recall;
    if (!force && last && Math.abs(this.annCount - last.vectors) < last.vectors * REMEASURE_GROWTH) return Promise.resolve();
    // Only once writes paused: the exact answers are computed before the graph is searched, and
    // vectors added in between are found by the graph but missing from the truth (measured: an
    // estimate of 0.133 and a width of 1,024 after a bulk load whose held-out recall was 0.9995).
    // (The same for vectors still queued for the graph.)
    const quietFor = performance.now() - this.changedAt;
    if (quietFor < MEASURE_QUIET_MS || this.pendingCount() > 0 || this.inFlight > 0) {
      this.measureLater(force, Math.max(100, MEASURE_QUIET_MS - quietFor));
      return Promise.resolve();
    }
    const changedAt = this.changedAt;
    this.measuring = measureRecall(this.recallProbe(), this.targetRecall)
      .then((curve) => {
        if (!curve || this.closed) return;
        if (this.changedAt !== changedAt) {
          // Written to meanwhile: this measurement compared different contents; measure again.
          this.measureLater(force, MEASURE_QUIET_MS);
          return;
        }
        this.recall = curve;
        this.width = curve.width;
        this.log("vector index recall measured", { index: this.graphId, vectors: curve.vectors, width: curve.width, recall: curve.recall });
        this.onMeasured();
      })
      .catch((err) => {
        if (!this.closed) this.failed(err);
      })
      .finally(() => {
        this.measuring = undefined;
      });
    return this.measuring;
  }

  /** Tries maybeMeasure again after `ms` (one retry pending at a time). */
  private measureLater(force: boolean, ms: number): void {
    if (this.retryMeasure) return;
    this.retryMeasure = setTimeout(() => {
      this.retryMeasure = undefined;
      void this.maybeMeasure(force);
    }, ms);
    this.retryMeasure.unref();
  }

  /** What the recall measurement needs: sample vectors, their exact neighbours, the graph's. */
  private recallProbe() {
    return {
      vectors: () => this.annCount,
      dimension: this.dim,
      /** Up to n live slots in the graph, spread over the index. */
      sample: (n: number): number[] => {
        const out: number[] = [];
        let x = (this.used * 2654435761) >>> 0;
        for (let i = 0; i < n * 8 && out.length < n; i++) {
          x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
          const s = x % this.used;
          if (this.live[s] && this.inAnn[s] && !out.includes(s)) out.push(s);
        }
        return out;
      },
      vector: (slot: number): Float32Array => this.vecs.slice(slot * this.dim, (slot + 1) * this.dim),
      nearest: (queries: Float32Array[], k: number, exclude?: number[]): Promise<number[][]> => {
        const d = this.dim;
        const flat = new Float32Array(queries.length * d);
        queries.forEach((q, i) => {
          flat.set(q, i * d);
        });
        return this.scans.nearest({
          dim: d,
          metric: this.metric,
          queries: flat,
          k,
          exclude: exclude && Int32Array.from(exclude),
          rows: this.used,
          // Copied a piece at a time as the thread asks (the array is replaced when it grows, and
          // a write meanwhile discards the measurement anyway, see maybeMeasure). Vectors written
          // since the measurement began are not in the graph yet: left out.
          piece: (lo, hi) => {
            if (this.closed) return undefined;
            const mask = new Uint8Array(hi - lo);
            for (let s = lo; s < hi; s++) mask[s - lo] = this.live[s] === 1 && this.inAnn[s] === 1 ? 1 : 0;
            return { vecs: this.vecs.slice(lo * d, hi * d), mask };
          },
        });
      },
      graph: async (q: Float32Array, k: number, width: number): Promise<number[]> => {
        if (this.closed) return [];
        const c = await this.annSearch(q, norm(q), Math.min(Math.max(k + RESCORE_EXTRA, width), this.annCount));
        return c.sort((a, b) => a.dist - b.dist).map((x) => x.slot);
      },
    };
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryMeasure);
    this.wakeWriters();
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

function norm(v: Float32Array): number {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += (v[i] as number) * (v[i] as number);
  return Math.sqrt(n);
}
