// Sandbox deadlines: a min-heap of (deadline, id) with one timer armed for the earliest, so a
// sandbox ends when its life runs out rather than at the next sweep, at the cost of one timer.

/** Node's timers take at most 2^31-1 ms; a later deadline re-arms when that much has passed. */
const MAX_DELAY_MS = 2 ** 31 - 1;

interface Entry {
  at: number;
  id: string;
}

export class DeadlineQueue {
  private readonly heap: Entry[] = [];
  /** The current deadline of each id; heap entries that disagree with it are stale and skipped. */
  private readonly current = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;
  private closed = false;

  /** `onDue(id)` runs (from a timer) once the id's deadline has passed. */
  constructor(
    private readonly onDue: (id: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Sets (or moves) the deadline of `id`, in ms since the epoch. */
  set(id: string, at: number): void {
    if (this.closed) return;
    this.current.set(id, at);
    this.push({ at, id });
    // Moved deadlines leave stale entries behind: rebuild before they outnumber the live ones.
    if (this.heap.length > 2 * this.current.size + 64) this.rebuild();
    if (at < this.armedFor) this.arm();
  }

  delete(id: string): void {
    this.current.delete(id);
  }

  /** The deadline now set for `id`, if any. */
  get(id: string): number | undefined {
    return this.current.get(id);
  }

  get size(): number {
    return this.current.size;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.current.clear();
    this.heap.length = 0;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    this.dropStale();
    const next = this.heap[0];
    if (!next || this.closed) return;
    this.armedFor = next.at;
    this.timer = setTimeout(() => this.fire(), Math.min(MAX_DELAY_MS, Math.max(0, next.at - this.now())));
    // Deadlines alone never keep the process alive.
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.now();
    const due: string[] = [];
    this.dropStale();
    for (let top = this.heap[0]; top && top.at <= now; top = this.heap[0]) {
      this.pop();
      this.current.delete(top.id);
      due.push(top.id);
      this.dropStale();
    }
    this.arm();
    for (const id of due) this.onDue(id);
  }

  private rebuild(): void {
    this.heap.length = 0;
    for (const [id, at] of this.current) this.push({ at, id });
  }

  private dropStale(): void {
    for (let top = this.heap[0]; top && this.current.get(top.id) !== top.at; top = this.heap[0]) this.pop();
  }

  /** The entry at `i` (callers keep `i` within the heap). */
  private entry(i: number): Entry {
    return this.heap[i] as Entry;
  }

  private swap(i: number, j: number): void {
    const a = this.entry(i);
    this.heap[i] = this.entry(j);
    this.heap[j] = a;
  }

  private push(entry: Entry): void {
    this.heap.push(entry);
    for (let i = this.heap.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (this.entry(parent).at <= this.entry(i).at) break;
      this.swap(parent, i);
      i = parent;
    }
  }

  private pop(): Entry | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let min = i;
        if (l < h.length && this.entry(l).at < this.entry(min).at) min = l;
        if (r < h.length && this.entry(r).at < this.entry(min).at) min = r;
        if (min === i) break;
        this.swap(min, i);
        i = min;
      }
    }
    return top;
  }
}
