// The operator's settings for lifecycle events and webhooks, declared once and read by openEvents()
// (src/events/setup.ts).
import { defineSettings, readSettings, type Settings, settingsOf } from "../settings/kernel.js";

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
  pendingMax: setting.integer("AGENTBOX_EVENTS_PENDING_MAX", {
    default: 10_000,
    minimum: 0,
    doc: "Events kept in memory, in order, while the database cannot be reached (a cluster's PostgreSQL down), and written once it answers; past it the oldest are dropped (logged). `0`: none kept.",
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

export type EventSettings = Settings<typeof eventSettingsSchema>;

export function eventSettings(env: NodeJS.ProcessEnv = process.env): EventSettings {
  return readSettings(eventSettingsSchema, env);
}
