// A polled watcher's waiting events, bounded in count and in bytes of names: a client that does not
// ask (or asks slowly) holds at most this much, never a tree's worth of events per tick forever.
// Over either bound the oldest events are dropped and counted; the next ask reports how many.

/** An event as the queue weighs it: its name is what can be long (a recursive watch's paths). */
export interface QueuedEvent {
  name: string;
}

/** Bytes an event is counted for: its name's UTF-8 length and a fixed share for the rest. */
export const eventBytes = (e: QueuedEvent): number => Buffer.byteLength(e.name) + 32;

export class EventQueue<E extends QueuedEvent> {
  private items: E[] = [];
  private head = 0;
  private heldBytes = 0;
  /** Events dropped (the oldest first) since the last take, because a bound was reached. */
  private droppedSince = 0;

  constructor(
    private readonly maxEvents: number,
    private readonly maxBytes: number,
  ) {}

  get length(): number {
    return this.items.length - this.head;
  }

  get bytes(): number {
    return this.heldBytes;
  }

  /** Appends `events`, then drops the oldest until both bounds hold again. */
  push(events: readonly E[]): void {
    for (const e of events) {
      this.items.push(e);
      this.heldBytes += eventBytes(e);
    }
    while (this.length > 0 && (this.length > this.maxEvents || this.heldBytes > this.maxBytes)) {
      const old = this.items[this.head++] as E;
      this.heldBytes -= eventBytes(old);
      this.droppedSince++;
    }
    // Compact once the dropped prefix is the larger part, so a queue never holds more than twice its bound.
    if (this.head > 0 && this.head >= this.items.length / 2) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  /** Every waiting event, oldest first, and how many were dropped before them; the queue is empty after. */
  take(): { events: E[]; dropped: number } {
    const events = this.items.slice(this.head);
    const dropped = this.droppedSince;
    this.clear();
    return { events, dropped };
  }

  /** Frees every waiting event at once (a failed or removed watcher). */
  clear(): void {
    this.items = [];
    this.head = 0;
    this.heldBytes = 0;
    this.droppedSince = 0;
  }
}
