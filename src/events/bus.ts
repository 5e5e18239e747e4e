// The sandbox lifecycle event bus: the one typed place where a sandbox's life events (created,
// paused, resumed, snapshotted, timeout_extended, ended with a reason) are announced; the event
// store and the webhook dispatcher listen to it.

/** Why a sandbox ended. */
/** `node_lost`: the node that ran it missed its lease in a cluster (src/cluster/node-loss.ts). */
export type EndReason = "killed" | "timed_out" | "oom" | "error" | "host_restart" | "node_lost";
export const END_REASONS: readonly EndReason[] = ["killed", "timed_out", "oom", "error", "host_restart", "node_lost"];

/** Who asked for a `killed` end. */
export type EndedBy = "api" | "operator";

export const EVENT_TYPES = ["created", "paused", "resumed", "snapshotted", "timeout_extended", "ended"] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Free-form, small, JSON-serialisable context of an event (e.g. a snapshot id, the new deadline). */
export type EventDetail = Record<string, unknown>;

interface Base {
  sandboxId: string;
  tenantId: string;
  /** ISO-8601; filled by emit() when left out. */
  at?: string;
  detail?: EventDetail;
}

export type LifecycleEvent =
  | (Base & { type: "created" | "paused" | "resumed" | "snapshotted" | "timeout_extended" })
  | (Base & { type: "ended"; reason: EndReason; by?: EndedBy });

/** An event as listeners receive it: always timestamped. */
export type EmittedEvent = LifecycleEvent & { at: string };

export type Listener = (event: EmittedEvent) => void;

export class LifecycleBus {
  private readonly listeners = new Set<Listener>();
  private onError: (err: unknown, event: EmittedEvent) => void = () => {};

  /** Listeners run synchronously in emit(): they must only record or enqueue, never wait. */
  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Where a listener's failure is reported (a failing listener never breaks the emitter or the others). */
  onListenerError(handler: (err: unknown, event: EmittedEvent) => void): void {
    this.onError = handler;
  }

  emit(event: LifecycleEvent): void {
    const stamped = (event.at ? event : { ...event, at: new Date().toISOString() }) as EmittedEvent;
    for (const listener of this.listeners) {
      try {
        listener(stamped);
      } catch (err) {
        this.onError(err, stamped);
      }
    }
  }
}
