// Per-API-key requests per minute (@fastify/rate-limit, draft-spec RateLimit-* headers): over it,
// 429 rate_limited with Retry-After, in the error envelope. Also counts the 429s and 503s raised
// further in (tenant quota, capacity). Executions at once are not limited here but by the sandbox
// service's gates (src/sandbox/gates.ts), which every run passes whichever route it came through.
//
// The per-minute counters live in the plugin's store: in memory by default, which is right for one
// API node. Several nodes share one budget by passing a Redis client (`{ redis: new Redis(url) }`,
// from the `ioredis` package) as `store.redis` to installRateLimits; nothing else changes.
import rateLimit, { type FastifyRateLimitStoreCtor } from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";
import type { ApiKeyRecord } from "../common/api-key.js";
import type { Services } from "./services.js";

export interface RateLimitStoreOptions {
  /** An ioredis client: the per-minute counters are then shared by every API node using it. */
  // biome-ignore lint/suspicious/noExplicitAny: the plugin types its Redis client as any (ioredis is optional)
  redis?: any;
  /** Or any store implementing the plugin's store interface. */
  store?: FastifyRateLimitStoreCtor;
  /** Requests counted already (by the cluster node that forwarded them here): not counted again. */
  exempt?: (request: FastifyRequest) => boolean;
}

/** The authenticated key of a request; undefined on public routes (health, metrics, documents). */
function keyOf(request: FastifyRequest): ApiKeyRecord | undefined {
  return (request as { apiKey?: ApiKeyRecord }).apiKey;
}

/**
 * Installs the per-minute limit. Must be called after authentication is installed (its hooks run
 * after auth's, so they know the key) and before the routes are registered.
 */
export async function installRateLimits(app: FastifyInstance, services: Services, stores: RateLimitStoreOptions = {}): Promise<void> {
  const { config, metrics } = services;
  const perMinute = (key: ApiKeyRecord) => key.rateLimitPerMinute ?? config.rateLimitPerMinute;
  const { exempt } = stores;

  await app.register(rateLimit, {
    global: true,
    // Runs in the route's own onRequest hooks, which come after the app-wide auth hook: the key is known.
    hook: "onRequest",
    timeWindow: 60_000,
    enableDraftSpec: true,
    keyGenerator: (request) => keyOf(request)?.id ?? "anonymous",
    max: (request) => {
      const key = keyOf(request);
      return key ? perMinute(key) : 0;
    },
    // Public routes carry no key and are not limited; a limit of 0 means none.
    allowList: (request) => {
      const key = keyOf(request);
      return key === undefined || perMinute(key) === 0 || exempt?.(request) === true;
    },
    // A store that fails (e.g. Redis down) lets requests through rather than failing them.
    skipOnError: true,
    ...(stores.redis ? { redis: stores.redis, nameSpace: "agentbox-rl-" } : {}),
    ...(stores.store ? { store: stores.store } : {}),
    onExceeded: () => metrics?.rateLimited.inc({ reason: "requests_per_minute" }),
    errorResponseBuilder: (_request, context) =>
      new ApiError(
        "rate_limited",
        `Rate limit of ${context.max} requests per minute exceeded for this API key; retry in ${context.after}`,
        Math.max(1, Math.ceil(context.ttl / 1000)),
      ),
  });

  if (metrics) {
    app.addHook("onError", async (request, _reply, err) => {
      if (!(err instanceof ApiError)) return;
      if (err.code === "quota_exceeded") metrics.rateLimited.inc({ reason: "tenant_quota" });
      else if (err.code === "at_capacity") metrics.atCapacity.inc({ route: request.routeOptions.url ?? "unmatched" });
    });
  }
}
