// Wiring of lifecycle events: the event store and the webhook dispatcher listen to the sandbox
// manager's bus; old events and delivery history are pruned now and then.
import type { Logger } from "pino";
import type { LifecycleBus } from "./bus.js";
import type { Persistence } from "../store/persistence.js";
import { type EventStore, SqliteEventStore } from "./store/events.js";
import { PgEventStore } from "./store/events-pg.js";
import { type EventSettings, eventSettings } from "./settings.js";
import { SqliteWebhookStore, type WebhookStore } from "./store/webhooks.js";
import { PgWebhookStore } from "./store/webhooks-pg.js";
import { EventWriter } from "./pending.js";
import { WebhookService } from "./webhooks.js";

export interface EventsArea {
  settings: EventSettings;
  events: EventStore;
  webhooks: WebhookService;
  close(): Promise<void>;
}

const PRUNE_EVERY_MS = 10 * 60_000;

/** Call before the manager's init(): the ends it records at start-up (e.g. `host_restart`) are events too. */
export async function openEvents(p: Persistence, bus: LifecycleBus, log: Logger, settings = eventSettings()): Promise<EventsArea> {
  const events: EventStore =
    p.kind === "pg" ? await PgEventStore.open(p.pool, settings.perSandbox) : new SqliteEventStore(p.db, settings.perSandbox);
  const webhookStore: WebhookStore = p.kind === "pg" ? await PgWebhookStore.open(p.pool) : new SqliteWebhookStore(p.db);
  const webhooks = new WebhookService(webhookStore, settings, log);
  const writer = new EventWriter((e) => events.add(e), settings.pendingMax, log, "events: event not stored");
  const deliveries = new EventWriter((e) => webhooks.queue(e), settings.pendingMax, log, "webhooks: event not queued");
  bus.on((event) => writer.write(event));
  bus.on((event) => deliveries.write(event));
  const prune = async () => {
    try {
      await events.prune(new Date(Date.now() - settings.retentionS * 1000).toISOString());
      await webhookStore.trimHistory(settings.webhookHistoryPerHook);
    } catch (err) {
      log.warn({ err }, "events: prune failed");
    }
  };
  void prune();
  const timer = setInterval(() => void prune(), PRUNE_EVERY_MS);
  timer.unref();
  webhooks.start();
  // Reads wait for the writes already started: a client reading a sandbox's events right after a
  // request that emitted one (a kill and its `ended`) finds it on this node.
  const readable: EventStore = {
    add: (e) => events.add(e),
    list: async (tenantId, sandboxId) => {
      await writer.settled();
      return events.list(tenantId, sandboxId);
    },
    prune: (cutoff) => events.prune(cutoff),
  };
  return {
    settings,
    events: readable,
    webhooks,
    close: async () => {
      clearInterval(timer);
      writer.close();
      deliveries.close();
      await webhooks.close();
    },
  };
}
