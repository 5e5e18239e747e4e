// Per-API-key limits: requests per minute (@fastify/rate-limit, draft-spec RateLimit-* headers) and
// executions at once (code/run, commands/run). Over either: 429 rate_limited with Retry-After, in
// the error envelope. Also counts the 429s and 503s the sandbox manager raises (tenant quota, capacity).
//
// The per-minute counters live in the plugin's store: in memory by default, which is right for one
// API node. Several nodes share one budget by passing a Redis client (`{ redis: new Redis(url) }`,
// from the `ioredis` package) as `store.redis` to installRateLimits; nothing else changes. The
// concurrent-run counts are in memory: a run is bound to the node that executes it.
import rateLimit, { type FastifyRateLimitStoreCtor } from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest, RouteOptions } from "fastify";
import { ApiError } from "../errors.js";
import type { ApiKeyRecord } from "../store/keys.js";
import type { Services } from "./services.js";

/** Routes whose handler counts as one execution against the key's concurrent-run limit. */
const EXECUTING_ROUTE = /\/(code|commands)\/run$/;

export interface RateLimitStoreOptions {
  /** An ioredis client: the per-minute counters are then shared by every API node using it. */
  // biome-ignore lint/suspicious/noExplicitAny: the plugin types its Redis client as any (ioredis is optional)
  redis?: any;
  /** Or any store implementing the plugin's store interface. */
  store?: FastifyRateLimitStoreCtor;
}

/** The authenticated key of a request; undefined on public routes (health, metrics, documents). */
function keyOf(request: FastifyRequest): ApiKeyRecord | undefined {
  return (request as { apiKey?: ApiKeyRecord }).apiKey;
}

/** Counts executions in flight per API key. */
export class RunGate {
  private readonly running = new Map<string, number>();

  constructor(private readonly defaultMax: number) {}

  limitFor(key: ApiKeyRecord): number {
    return key.maxConcurrentRuns ?? this.defaultMax;
  }

  /** Takes a slot for `key` or throws 429; the returned function gives it back (once). */
  acquire(key: ApiKeyRecord): () => void {
    const max = this.limitFor(key);
    const now = this.running.get(key.id) ?? 0;
    if (max > 0 && now >= max) {
      throw new ApiError("rate_limited", `This API key already has ${max} executions running, its limit; retry when one finishes`, 1);
    }
    this.running.set(key.id, now + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.running.get(key.id) ?? 1) - 1;
      if (left <= 0) this.running.delete(key.id);
      else this.running.set(key.id, left);
    };
  }

  inFlight(keyId: string): number {
    return this.running.get(keyId) ?? 0;
  }
}

/**
 * Installs both limits. Must be called after authentication is installed (its hooks run after
 * auth's, so they know the key) and before the routes are registered (it hooks each new route).
 */
export async function installRateLimits(app: FastifyInstance, services: Services, stores: RateLimitStoreOptions = {}): Promise<void> {
  const { config, metrics } = services;
  const perMinute = (key: ApiKeyRecord) => key.rateLimitPerMinute ?? config.rateLimitPerMinute;

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
      return key === undefined || perMinute(key) === 0;
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

  const gate = new RunGate(config.maxConcurrentRunsPerKey);
  app.addHook("onRoute", (route: RouteOptions) => {
    if (!EXECUTING_ROUTE.test(route.url)) return;
    const handler = route.handler;
    // Wrapping the handler (not an onRequest/onResponse pair) frees the slot exactly when the
    // execution ends, even if the client went away meanwhile.
    route.handler = async function (this: FastifyInstance, request, reply) {
      const key = keyOf(request);
      let release: (() => void) | undefined;
      if (key) {
        try {
          release = gate.acquire(key);
        } catch (err) {
          metrics?.rateLimited.inc({ reason: "concurrent_runs" });
          throw err;
        }
      }
      try {
        return await handler.call(this, request, reply);
      } finally {
        release?.();
      }
    };
  });

  if (metrics) {
    app.addHook("onError", async (request, _reply, err) => {
      if (!(err instanceof ApiError)) return;
      if (err.code === "quota_exceeded") metrics.rateLimited.inc({ reason: "tenant_quota" });
      else if (err.code === "at_capacity") metrics.atCapacity.inc({ route: request.routeOptions.url ?? "unmatched" });
    });
  }
}
