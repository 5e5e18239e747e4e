// The operator's settings for lifecycle events and webhooks, read from the environment once at
// start-up (see docs/operations.md).

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

function num(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got '${raw}'`);
  return n;
}

export function eventSettings(): EventSettings {
  return {
    perSandbox: num("AGENTBOX_EVENTS_PER_SANDBOX", 200, 10),
    retentionS: num("AGENTBOX_EVENTS_RETENTION_S", 7 * 86400, 60),
    webhookAllowPrivate: process.env.AGENTBOX_WEBHOOK_ALLOW_PRIVATE === "1",
    webhooksPerTenant: num("AGENTBOX_WEBHOOKS_PER_TENANT", 20, 1),
    webhookConcurrency: num("AGENTBOX_WEBHOOK_CONCURRENCY", 16, 1),
    webhookConcurrencyPerHook: num("AGENTBOX_WEBHOOK_CONCURRENCY_PER_HOOK", 4, 1),
    webhookTimeoutMs: num("AGENTBOX_WEBHOOK_TIMEOUT_MS", 10_000, 100),
    webhookRetryBaseMs: num("AGENTBOX_WEBHOOK_RETRY_BASE_MS", 5_000, 10),
    webhookRetryMaxMs: num("AGENTBOX_WEBHOOK_RETRY_MAX_MS", 10 * 60_000, 10),
    webhookRetryWindowMs: num("AGENTBOX_WEBHOOK_RETRY_WINDOW_MS", 30 * 60_000, 1000),
    webhookQueuePerHook: num("AGENTBOX_WEBHOOK_QUEUE_PER_HOOK", 1000, 1),
    webhookHistoryPerHook: num("AGENTBOX_WEBHOOK_HISTORY_PER_HOOK", 200, 1),
  };
}
