// GET /v1/agents/stats (any API key) and /v1/admin/stats (the admin key): live sandboxes, runs per
// second, error rate and the last hour in 10 s steps, service-wide, read from the metrics counters.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Metrics } from "../metrics.js";
import { errors } from "../schemas/common.js";
import { StatsReport } from "../schemas/stats.js";
import { rates, SAMPLE_MS, StatsHistory } from "../stats-history.js";

export const statsRoutes: FastifyPluginAsyncTypebox<{ metrics: Metrics; liveCount: () => number }> = async (app, opts) => {
  const history = new StatsHistory(opts.metrics, opts.liveCount);
  app.addHook("onClose", async () => history.close());

  const handler = async () => {
    const { sample: now, languages } = await history.read();
    const samples = history.samples();
    // The reading about a minute ago (the oldest there is, right after a start).
    const minuteAgo = [...samples].reverse().find((s) => now.at - s.at >= 60_000) ?? samples[0] ?? now;
    const { runsPerSecond, errorRate } = rates(minuteAgo, now);
    const series = samples.slice(1).map((s, i) => {
      const prev = samples[i] as typeof s;
      return { timestamp: new Date(s.at).toISOString(), runs: s.runs - prev.runs, errors: s.errors - prev.errors, live_sandboxes: s.live };
    });
    return {
      timestamp: new Date(now.at).toISOString(),
      live_sandboxes: now.live,
      runs_per_second: Math.round(runsPerSecond * 1000) / 1000,
      error_rate: Math.round(errorRate * 10000) / 10000,
      interval_seconds: SAMPLE_MS / 1000,
      series,
      runs_by_language: languages,
    };
  };
  const schema = (tag: string) => ({
    tags: [tag],
    summary: "Service activity over the last hour",
    description: "Live sandboxes, runs per second and error rate over the last minute, the last hour in 10 s steps, runs per language.",
    response: { 200: StatsReport, ...errors(401) },
  });
  app.get("/v1/agents/stats", { schema: schema("sandboxes") }, handler);
  app.get("/v1/admin/stats", { schema: schema("admin") }, handler);
};
