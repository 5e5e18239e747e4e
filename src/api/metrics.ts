// Prometheus metrics for operators: HTTP traffic by route and status, executions by language and
// outcome, live sandboxes, kernel restarts, rate-limit and capacity rejections. Served at GET /metrics.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: "agentbox_http_requests_total",
    help: "HTTP requests",
    labelNames: ["method", "route", "status"],
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: "agentbox_http_request_duration_seconds",
    help: "HTTP request latency",
    labelNames: ["method", "route", "status"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly executions = new Counter({
    name: "agentbox_executions_total",
    help: "Code runs by language and outcome",
    labelNames: ["language", "outcome"],
    registers: [this.registry],
  });
  /** Code runs by tenant, for the stats routes only: not in the registry, since /metrics needs no
   *  key and must not list the tenants. */
  readonly tenantExecutions = new Counter({
    name: "agentbox_tenant_executions_total",
    help: "Code runs by tenant, language and outcome (the dashboard's per-tenant activity)",
    labelNames: ["tenant", "language", "outcome"],
    registers: [],
  });
  readonly rateLimited = new Counter({
    name: "agentbox_rate_limited_total",
    help: "Requests rejected with 429: reason requests_per_minute, concurrent_runs (per key), tenant_concurrent_runs, fair_share, tenant_quota or embedding_tenant_inputs",
    labelNames: ["reason"],
    registers: [this.registry],
  });
  readonly atCapacity = new Counter({
    name: "agentbox_at_capacity_total",
    help: "Requests rejected with 503 at_capacity, by route",
    labelNames: ["route"],
    registers: [this.registry],
  });
  readonly kernelRestarts = new Counter({
    name: "agentbox_kernel_restarts_total",
    help: "Runs after which the kernel was restarted and its state lost (exit, crash, timeout, out of memory), by language",
    labelNames: ["language"],
    registers: [this.registry],
  });
  readonly connectionsRefused = new Counter({
    name: "agentbox_connections_refused_total",
    help: "Client connections closed at once: reason per_address (the address held its share) or total (the service's cap)",
    labelNames: ["reason"],
    registers: [this.registry],
  });
  readonly openConnections = new Gauge({
    name: "agentbox_open_connections",
    help: "Client connections open now",
    registers: [this.registry],
  });
  readonly embeddingJobs = new Counter({
    name: "agentbox_embedding_jobs_total",
    help: "Jobs of the built-in embedding model (up to 32 inputs each) by outcome: done, failed, cancelled (the client went away) or expired (the request's deadline passed)",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  readonly liveSandboxes: Gauge;

  /** `node`: this node's AGENTBOX_NODE_ID and roles, for agentbox_node_info (a lone service: roles "both"). */
  constructor(liveCount: () => number, node?: { id: string; roles: string }) {
    collectDefaultMetrics({ register: this.registry, prefix: "agentbox_" });
    // Which node a scrape came from, to join a cluster's per-node series on (each node serves its own /metrics).
    if (node)
      new Gauge({
        name: "agentbox_node_info",
        help: "1, labelled with this node's id and roles",
        labelNames: ["node_id", "roles"],
        registers: [this.registry],
      }).set({ node_id: node.id, roles: node.roles }, 1);
    this.liveSandboxes = new Gauge({
      name: "agentbox_live_sandboxes",
      help: "Sandboxes running now",
      registers: [this.registry],
      collect() {
        this.set(liveCount());
      },
    });
  }

  /** The vector indexes this node holds in memory, and how often one was loaded, read at each scrape. */
  watchVectors(source: { loaded(): string[]; readonly loads: number }): void {
    new Gauge({
      name: "agentbox_vector_indexes_loaded",
      help: "Vector indexes held in this node's memory (in a cluster: those it owns, and for a while those it answered while their owner could not be reached)",
      registers: [this.registry],
      collect() {
        this.set(source.loaded().length);
      },
    });
    new Counter({
      name: "agentbox_vector_index_loads_total",
      help: "Loads of a vector index into this node's memory from its records (its first use after a start, a copy found stale, a change of owner)",
      registers: [this.registry],
      collect() {
        // A count kept by the engine: the counter shows it as it is at the scrape.
        this.reset();
        this.inc(source.loads);
      },
    });
  }

  /** Template builds waiting and running on this node, and the build logs it holds in memory, read at each scrape. */
  watchTemplateBuilds(source: { buildCounts(): { logs: number; logBytes: number; waiting: number; running: number } }): void {
    const gauge = (name: string, help: string, read: (c: ReturnType<typeof source.buildCounts>) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(source.buildCounts()));
        },
      });
    gauge("agentbox_template_builds_waiting", "Template builds waiting on this node, over all tenants", (c) => c.waiting);
    gauge("agentbox_template_builds_running", "Template builds running on this node", (c) => c.running);
    gauge(
      "agentbox_template_build_logs_in_memory",
      "Build logs this node holds in memory (builds waiting, running, or ended within AGENTBOX_TEMPLATE_LOG_GRACE_S)",
      (c) => c.logs,
    );
    gauge("agentbox_template_build_log_bytes", "What the build logs held in memory cost, in bytes (about)", (c) => c.logBytes);
  }

  /** The built-in embedding model's queue and state, read at each scrape. */
  watchEmbeddings(source: { queuedJobs(): number; modelLoaded(): boolean }): void {
    new Gauge({
      name: "agentbox_embedding_jobs_queued",
      help: "Jobs waiting for the built-in embedding model, over all tenants",
      registers: [this.registry],
      collect() {
        this.set(source.queuedJobs());
      },
    });
    new Gauge({
      name: "agentbox_embedding_model_loaded",
      help: "1 once the built-in embedding model is loaded (at start unless AGENTBOX_EMBEDDING_PRELOAD is off), else 0",
      registers: [this.registry],
      collect() {
        this.set(source.modelLoaded() ? 1 : 0);
      },
    });
  }

  /** The E2B polled watchers' records and the events they hold, read at each scrape. */
  watchWatchers(source: { held(): { records: number; events: number; bytes: number }; readonly dropped: number }): void {
    const gauges = [
      [
        "agentbox_e2b_watcher_records",
        "E2B polled watchers held (live, or ended and keeping only their error until asked or expired)",
        "records",
      ],
      ["agentbox_e2b_watcher_queued_events", "Events E2B polled watchers hold for their clients' next ask", "events"],
      ["agentbox_e2b_watcher_queued_bytes", "Bytes of those events (names, and 32 per event)", "bytes"],
    ] as const;
    for (const [name, help, field] of gauges)
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(source.held()[field]);
        },
      });
    new Counter({
      name: "agentbox_e2b_watcher_events_dropped_total",
      help: "Events dropped (the oldest first) from a polled watcher's full queue",
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(source.dropped);
      },
    });
  }
}
