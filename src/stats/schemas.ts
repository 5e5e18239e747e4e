// GET /v1/agents/stats (a tenant's own activity) and /v1/admin/stats (the service's, per tenant too).
import { type Static, Type } from "@sinclair/typebox";

export const StatsReport = Type.Object(
  {
    timestamp: Type.String({ format: "date-time" }),
    live_sandboxes: Type.Integer({ description: "Sandboxes running now (the key's tenant's; the service's under /v1/admin)" }),
    runs_per_second: Type.Number({ description: "Code runs per second over the last minute" }),
    error_rate: Type.Number({ description: "Fraction (0..1) of the last minute's runs that failed (error, timeout, out of memory, ...)" }),
    interval_seconds: Type.Integer({ description: "Seconds between two points of the series" }),
    series: Type.Array(
      Type.Object(
        {
          timestamp: Type.String({ format: "date-time" }),
          runs: Type.Integer({ description: "Runs in the interval that ends here" }),
          errors: Type.Integer({ description: "Failed runs in that interval" }),
          live_sandboxes: Type.Integer(),
        },
        { additionalProperties: false },
      ),
      { description: "The last hour, oldest first (shorter after a restart)" },
    ),
    runs_by_language: Type.Array(
      Type.Object({ language: Type.String(), runs: Type.Integer(), errors: Type.Integer() }, { additionalProperties: false }),
      { description: "Runs per language since the service started" },
    ),
    tenants: Type.Optional(
      Type.Array(
        Type.Object(
          {
            tenant_id: Type.String(),
            live_sandboxes: Type.Integer(),
            runs: Type.Integer({ description: "Code runs since the service started" }),
            errors: Type.Integer({ description: "Failed runs since the service started" }),
          },
          { additionalProperties: false },
        ),
        { description: "Only under /v1/admin/stats: each tenant with a live sandbox or a run since the service started, busiest first" },
      ),
    ),
    missing_nodes: Type.Optional(
      Type.Array(Type.String(), {
        description:
          "Only in a cluster, and only when some node did not answer in time: the ids of the nodes whose numbers are left out (the others' are summed)",
      }),
    ),
  },
  { additionalProperties: false },
);

export type StatsReport = Static<typeof StatsReport>;
