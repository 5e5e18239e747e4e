// GET /v1/agents/stats (any API key: its own tenant's sandboxes and runs) and /v1/admin/stats (the
// admin key: the whole service, and a row per tenant): live sandboxes, runs per second, error rate
// and the last hour in 10 s steps, read from the metrics counters.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Metrics } from "../api/metrics.js";
import { errors } from "../api/schemas/common.js";
import { StatsReport } from "./schemas.js";
import { activityOf, rates, SAMPLE_MS, StatsHistory } from "./history.js";

export const statsRoutes: FastifyPluginAsyncTypebox<{
  metrics: Metrics;
  liveByTenant: () => ReadonlyMap<string, number>;
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
    async (request) => (await report(request.apiKey.tenantId)).report,
  );
  app.get(
    "/v1/admin/stats",
    {
      schema: schema(
        "admin",
        "The whole service, as /v1/agents/stats shows a tenant, plus `tenants`: each tenant's live sandboxes and runs.",
      ),
    },
    async () => {
      const { report: all, sample } = await report();
      const tenants = [...sample.tenants]
        .map(([tenant_id, t]) => ({ tenant_id, live_sandboxes: t.live, runs: t.runs, errors: t.errors }))
        .sort((a, b) => b.runs - a.runs || b.live_sandboxes - a.live_sandboxes || a.tenant_id.localeCompare(b.tenant_id));
      return { ...all, tenants };
    },
  );
};
