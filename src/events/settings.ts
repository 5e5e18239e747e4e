// The operator's settings for lifecycle events and webhooks, declared once and read by openEvents()
// (src/events/setup.ts).
import { defineSettings, readSettings, settingsOf } from "../settings/kernel.js";

export interface EventSettings {
  /** Events kept per sandbox (the oldest go first). */
  perSandbox: number;
  /** Seconds the events of an ended sandbox are kept. */
  retentionS: number;
  /** Webhook URLs may resolve to loopback, link-local and private addresses (test setups, private networks). */
  webhookAllowPrivate: boolean;
  /** Webhooks one tenant may register. */
  webhooksPerTenant: number;
  /** Deliveries sent at once, service-wide. */
  webhookConcurrency: number;
  /** Deliveries to one webhook sent at once (a slow receiver cannot take every slot). */
  webhookConcurrencyPerHook: number;
  /** One delivery attempt's time limit, ms (connect, send, answer). */
  webhookTimeoutMs: number;
  /** The first retry's delay, ms; each next one doubles, up to webhookRetryMaxMs. */
  webhookRetryBaseMs: number;
  webhookRetryMaxMs: number;
  /** How long a delivery is retried before it is given up, ms (at least 10 minutes). */
  webhookRetryWindowMs: number;
  /** Deliveries waiting per webhook; over it, new events for that webhook are dropped (and counted as failed). */
  webhookQueuePerHook: number;
  /** Finished deliveries kept per webhook (what GET .../deliveries shows). */
  webhookHistoryPerHook: number;
}

const setting = settingsOf("events");

export const eventSettingsSchema = defineSettings({
  perSandbox: setting.integer("AGENTBOX_EVENTS_PER_SANDBOX", {
    default: 200,
    minimum: 10,
    doc: "Events kept per sandbox (`GET /sandboxes/{id}/events`); the oldest go first.",
  }),
  retentionS: setting.integer("AGENTBOX_EVENTS_RETENTION_S", {
    default: 7 * 86400,
    defaultDoc: "`604800` (7 days)",
    minimum: 60,
    doc: "How long the events of an ended sandbox are kept (pruned every 10 minutes).",
  }),
  webhookAllowPrivate: setting.boolean("AGENTBOX_WEBHOOK_ALLOW_PRIVATE", {
    default: false,
    defaultDoc: "unset",
    doc: "`1`: webhook URLs may resolve to loopback, private and link-local addresses and the host's own networks (a receiver on this host, on its subnet, or in a private network). Without it they are refused at registration and at every delivery.",
  }),
  webhooksPerTenant: setting.integer("AGENTBOX_WEBHOOKS_PER_TENANT", {
    default: 20,
    minimum: 1,
    doc: "Webhooks one tenant may register (429 past it).",
  }),
  webhookConcurrency: setting.integer("AGENTBOX_WEBHOOK_CONCURRENCY", {
    default: 16,
    minimum: 1,
    doc: "Deliveries in flight at once, service-wide.",
  }),
  webhookConcurrencyPerHook: setting.integer("AGENTBOX_WEBHOOK_CONCURRENCY_PER_HOOK", {
    default: 4,
    minimum: 1,
    doc: "Deliveries in flight to one webhook (a dead receiver ties up at most this many).",
  }),
  webhookTimeoutMs: setting.integer("AGENTBOX_WEBHOOK_TIMEOUT_MS", {
    default: 10_000,
    minimum: 100,
    doc: "One attempt's limit (connect, send, answer).",
  }),
  webhookRetryBaseMs: setting.integer("AGENTBOX_WEBHOOK_RETRY_BASE_MS", {
    default: 5_000,
    minimum: 10,
    doc: "First retry delay; each next one doubles (±20% jitter) ...",
  }),
  webhookRetryMaxMs: setting.integer("AGENTBOX_WEBHOOK_RETRY_MAX_MS", { default: 10 * 60_000, minimum: 10, doc: "... up to this." }),
  webhookRetryWindowMs: setting.integer("AGENTBOX_WEBHOOK_RETRY_WINDOW_MS", {
    default: 30 * 60_000,
    defaultDoc: "`1800000` (30 min)",
    minimum: 1000,
    doc: "How long after its event a delivery is retried before it is marked `failed`.",
  }),
  webhookQueuePerHook: setting.integer("AGENTBOX_WEBHOOK_QUEUE_PER_HOOK", {
    default: 1000,
    minimum: 1,
    doc: 'Deliveries pending per webhook; past it new events for that webhook are recorded as `failed` ("not sent") instead of queued.',
  }),
  webhookHistoryPerHook: setting.integer("AGENTBOX_WEBHOOK_HISTORY_PER_HOOK", {
    default: 200,
    minimum: 1,
    doc: "Finished deliveries kept per webhook (`GET /webhooks/{id}/deliveries`).",
  }),
});

export function eventSettings(env: NodeJS.ProcessEnv = process.env): EventSettings {
  return readSettings(eventSettingsSchema, env);
}
