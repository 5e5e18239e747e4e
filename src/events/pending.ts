// Lifecycle events that could not be written because the database was unreachable (a cluster's
// PostgreSQL down or restarting): kept here in order, up to a bound, and written again once it
// answers, so an outage does not lose the `created` or `ended` event of a sandbox whose record was
// written, nor its webhook deliveries. Events that follow one kept here wait behind it, so a
// sandbox's events keep their order. One writer for the event store, one for the webhooks' queue.
import type { Logger } from "pino";
import { ApiError } from "../errors.js";
import type { EmittedEvent } from "./bus.js";

/** How often writing the kept events is tried again while the database is away. */
const RETRY_MS = 1000;

const unavailable = (err: unknown) => err instanceof ApiError && err.code === "database_unavailable";

export class EventWriter {
  private readonly waiting: EmittedEvent[] = [];
  /** Writes started and not ended yet. */
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private draining = false;

  constructor(
    /** Writes one event to the database (the event store's add, the webhooks' queue). */
    private readonly store: (event: EmittedEvent) => Promise<void>,
    /** Events kept at most (AGENTBOX_EVENTS_PENDING_MAX); past it the oldest are dropped, and logged. */
    private readonly max: number,
    private readonly log: Logger,
    /** What the log says of an event it could not write, e.g. "events: event not stored". */
    private readonly failed: string,
  ) {}

  /** Writes the event, or keeps it for later if the database is away (or events are kept already). */
  write(event: EmittedEvent): void {
    if (this.waiting.length > 0) {
      this.keep(event);
      return;
    }
    const written = this.store(event)
      .catch((err) => {
        if (unavailable(err)) this.keep(event);
        else this.log.warn({ err, sandbox_id: event.sandboxId }, this.failed);
      })
      .finally(() => this.inFlight.delete(written));
    this.inFlight.add(written);
  }

  /**
   * Resolves once the writes started so far have ended (written, or kept for later): a read after
   * it sees every event emitted before it, e.g. the `ended` of a kill answered a moment ago (with
   * PostgreSQL the insert can still be on its way when the kill's answer leaves).
   */
  async settled(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  /** Events kept now. */
  get pending(): number {
    return this.waiting.length;
  }

  private keep(event: EmittedEvent): void {
    this.waiting.push(event);
    if (this.waiting.length > this.max) {
      const dropped = this.waiting.shift() as EmittedEvent;
      this.log.warn(
        { sandbox_id: dropped.sandboxId, type: dropped.type },
        "events: too many events waiting for the database; the oldest dropped",
      );
    }
    this.timer ??= setTimeout(() => void this.drain(), RETRY_MS);
    this.timer.unref();
  }

  /** Writes the kept events in order until the database refuses again. */
  private async drain(): Promise<void> {
    this.timer = undefined;
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.waiting.length > 0) {
        const event = this.waiting[0] as EmittedEvent;
        try {
          await this.store(event);
        } catch (err) {
          if (unavailable(err)) break;
          this.log.warn({ err, sandbox_id: event.sandboxId }, this.failed);
        }
        this.waiting.shift();
      }
    } finally {
      this.draining = false;
    }
    if (this.waiting.length > 0) this.timer ??= setTimeout(() => void this.drain(), RETRY_MS);
    this.timer?.unref();
  }

  /** Stops retrying (the service is stopping; what is kept is lost with the process, and logged). */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.waiting.length > 0)
      this.log.warn({ events: this.waiting.length }, "events: not stored before the stop (database unavailable)");
  }
}
