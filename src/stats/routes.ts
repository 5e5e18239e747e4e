// GET /v1/agents/stats (any API key: its own tenant's sandboxes and runs) and /v1/admin/stats (the
// admin key: the whole service, and a row per tenant): live sandboxes, runs per second, error rate
// and the last hour in 10 s steps, read from the metrics counters. In a cluster, summed over the
// nodes: each node's counters are its own, so the node asked gathers the others' (./merge.ts).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import type { Metrics } from "../api/metrics.js";
import { errors } from "../api/schemas/common.js";
import { StatsReport } from "./schemas.js";
import { activityOf, rates, SAMPLE_MS, StatsHistory } from "./history.js";
import { byActivity, mergeReports } from "./merge.js";

/** The other nodes of a cluster (src/cluster/peers.ts), asked for their own reports. */
export interface StatsPeers {
  /** Whether another node sent this request: it gets this node's own numbers (throws on a bad node signature). */
  fromPeer(headers: Record<string, string | string[] | undefined>, method: string, url: string): boolean;
  /** The same GET (a path) with the client's key on every other live node; the ids of those that did not answer. */
  ask<T>(url: string, authorization: string): Promise<{ answers: T[]; missing: string[] }>;
}

export const statsRoutes: FastifyPluginAsyncTypebox<{
  metrics: Metrics;
  liveByTenant: () => ReadonlyMap<string, number>;
  /** Absent: one node, whose numbers are the whole service's. */
  peers?: StatsPeers;
}> = async (app, opts) => {
  const history = new StatsHistory(opts.metrics, opts.liveByTenant);
  app.addHook("onClose", async () => history.close());

  /** The report for one tenant, or for the whole service when `tenant` is undefined. */
  const report = async (tenant?: string) => {
    const { sample, languages } = await history.read(tenant);
    const now = activityOf(sample, tenant);
    const samples = history.samples().map((s) => activityOf(s, tenant));
    // The reading about a minute ago (the oldest there is, right after a start).
    const minuteAgo = [...samples].reverse().find((s) => now.at - s.at >= 60_000) ?? samples[0] ?? now;
    const { runsPerSecond, errorRate } = rates(minuteAgo, now);
    const series = samples.slice(1).map((s, i) => {
      const prev = samples[i] as typeof s;
      return { timestamp: new Date(s.at).toISOString(), runs: s.runs - prev.runs, errors: s.errors - prev.errors, live_sandboxes: s.live };
    });
    return {
      report: {
        timestamp: new Date(now.at).toISOString(),
        live_sandboxes: now.live,
        runs_per_second: Math.round(runsPerSecond * 1000) / 1000,
        error_rate: Math.round(errorRate * 10000) / 10000,
        interval_seconds: SAMPLE_MS / 1000,
        series,
        runs_by_language: languages,
      },
      sample,
    };
  };
  /** This node's report, summed with the other nodes' in a cluster (unless another node is asking). */
  const overCluster = async (request: FastifyRequest, own: Promise<StatsReport>): Promise<StatsReport> => {
    const { peers } = opts;
    if (!peers || peers.fromPeer(request.headers, request.method, request.url)) return own;
    const [mine, theirs] = await Promise.all([own, peers.ask<StatsReport>(request.url, request.headers.authorization ?? "")]);
    return mergeReports(mine, theirs.answers, theirs.missing);
  };
  const schema = (tag: string, description: string) => ({
    tags: [tag],
    summary: tag === "admin" ? "The service's activity over the last hour, per tenant" : "Your activity over the last hour",
    description,
    response: { 200: StatsReport, ...errors(401) },
  });
  app.get(
    "/v1/agents/stats",
    {
      schema: schema(
        "sandboxes",
        "The key's tenant only: its live sandboxes, runs per second and error rate over the last minute, the last hour in 10 s steps, runs per language.",
      ),
    },
    async (request) =>
      overCluster(
        request,
        report(request.apiKey.tenantId).then((r) => r.report),
      ),
  );
  app.get(
    "/v1/admin/stats",
    {
      schema: schema(
        "admin",
        "The whole service, as /v1/agents/stats shows a tenant, plus `tenants`: each tenant's live sandboxes and runs.",
      ),
    },
    async (request) => {
      const own = report().then(({ report: all, sample }) => {
        const tenants = [...sample.tenants]
          .map(([tenant_id, t]) => ({ tenant_id, live_sandboxes: t.live, runs: t.runs, errors: t.errors }))
          .sort(byActivity);
        return { ...all, tenants };
      });
      return overCluster(request, own);
    },
  );
};
