// Settings of deployments (/v1/deployments): replica sizing, the router's queue, autoscaling and
// health-check timing, and the OpenAI-compatible server commands the operator allows as models.
// Declared once; read by openDeployments() (src/deployments/setup.ts).
import { defineSettings, readSettings, settingsOf } from "../settings/kernel.js";
import { type DeclaredGpus, parseDeclaredGpus } from "./accelerators.js";
import type { DeploymentSettings } from "./deployment.js";

/** An operator-allowed server command: `{port}` in an argument is replaced by the replica's port. */
export interface ServerCommand {
  command: string[];
  /** GET this path answers 200 once the server can serve (default "/health"). */
  healthPath: string;
  /** Whether requests with tools may go to it. */
  tools: boolean;
}

export interface DeploymentsConfig extends DeploymentSettings {
  /** Most replicas one deployment may ask for (max_replicas). */
  maxReplicas: number;
  /** Most replicas of all deployments together on this host. */
  maxHostReplicas: number;
  /** Most deployments one tenant may have. */
  maxPerTenant: number;
  /** Tokens of context of a GGUF replica. */
  contextSize: number;
  /** CPU threads of a GGUF replica (0: llama.cpp's choice). */
  threads: number | undefined;
  /** Unprivileged uid (and gid) GGUF replicas run as; undefined: the service's own. */
  replicaUid: number | undefined;
  /** Model names served by an operator-allowed command instead of a GGUF file. */
  servers: Record<string, ServerCommand>;
  /** AGENTBOX_NODE_GPUS: the GPUs this node declares (undefined: nvidia-smi says). */
  gpus: DeclaredGpus[] | undefined;
}

function parseServers(raw: string): Record<string, ServerCommand> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('AGENTBOX_DEPLOYMENT_SERVERS must be JSON: {"<model name>": {"command": ["llama-server", ...]}}');
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new Error("AGENTBOX_DEPLOYMENT_SERVERS must be a JSON object of model names");
  const out: Record<string, ServerCommand> = {};
  for (const [name, v] of Object.entries(parsed as Record<string, unknown>)) {
    const o = (typeof v === "object" && v !== null ? v : {}) as Record<string, unknown>;
    const cmd = o.command;
    if (!Array.isArray(cmd) || cmd.length === 0 || cmd.some((a) => typeof a !== "string"))
      throw new Error(`AGENTBOX_DEPLOYMENT_SERVERS.${name}.command must be a non-empty array of strings`);
    if (!cmd.some((a: string) => a.includes("{port}")))
      throw new Error(`AGENTBOX_DEPLOYMENT_SERVERS.${name}.command must pass the port somewhere as {port}`);
    out[name] = {
      command: cmd as string[],
      healthPath: typeof o.health_path === "string" ? o.health_path : "/health",
      tools: o.tools === true,
    };
  }
  return out;
}

/** A uid, or -1 for the service's own (undefined). */
function parseUid(raw: string): number | undefined {
  if (raw === "-1") return undefined;
  const uid = Number(raw);
  if (!Number.isInteger(uid) || uid < 0) throw new Error(`AGENTBOX_REPLICA_UID must be a uid (or -1 for the service's own), got '${raw}'`);
  return uid;
}

const setting = settingsOf("deployments");

export const deploymentsSettingsSchema = defineSettings({
  maxReplicas: setting.number("AGENTBOX_DEPLOYMENT_MAX_REPLICAS", {
    default: (m) => Math.max(2, m.cores),
    defaultDoc: "cores (at least 2)",
    atLeast: 1,
    doc: "Largest `max_replicas` one deployment may ask for (400 past it).",
  }),
  maxPerTenant: setting.number("AGENTBOX_MAX_DEPLOYMENTS_PER_TENANT", {
    default: 8,
    doc: "Deployments one tenant may have (429 past it).",
  }),
  // Each replica is a process with its own model copy in memory and its own threads: past a few
  // per core they only take turns.
  maxHostReplicas: setting.number("AGENTBOX_MAX_REPLICAS", {
    default: (m) => Math.max(4, 2 * m.cores),
    defaultDoc: "twice the cores (at least 4)",
    atLeast: 1,
    doc: "Replicas of all deployments together on this host: a create whose `min_replicas` would not fit beside the others' is 503 `at_capacity`; scale-up stops there.",
  }),
  memoryMb: setting.number("AGENTBOX_REPLICA_MEMORY_MB", {
    default: 4096,
    doc: "Memory cgroup limit of each replica process (a GGUF replica needs about the model file's size plus its context).",
  }),
  // Replicas share the host's cores: llama.cpp's default (every core) in several replicas at once
  // makes their threads spin against each other, which is many times slower than one thread each.
  threads: setting.number("AGENTBOX_REPLICA_THREADS", {
    default: (m) => Math.max(1, Math.floor(m.cores / 2)),
    defaultDoc: "half the cores (at least 1)",
    doc: "CPU threads of a GGUF replica; `0` = llama.cpp's own choice (every core). Several replicas with every core each spin against each other and are many times slower.",
  }),
  // nobody: a GGUF parser bug reached through a crafted model file gets no privileges. -1: off.
  replicaUid: setting.custom("AGENTBOX_REPLICA_UID", {
    default: 65534 as number | undefined,
    defaultDoc: "`65534` (nobody)",
    parse: parseUid,
    doc: "Uid and gid GGUF replicas run as; `-1` = the service's own. The replica gets the model file as an open descriptor, so it needs no access to the data dir, but the file itself must be readable by others (pulled models and stored-file copies are); a model file only its owner may read is run as the service's user. The install directory (node, the service's code) must be readable by this uid.",
  }),
  parallel: setting.number("AGENTBOX_REPLICA_PARALLEL", {
    default: 1,
    atLeast: 1,
    doc: "Requests one replica serves at once (its context sequences); more wait in the deployment's queue.",
  }),
  contextSize: setting.number("AGENTBOX_REPLICA_CONTEXT_SIZE", {
    default: 4096,
    doc: "Tokens of context of a GGUF replica (capped at the model's).",
  }),
  startTimeoutS: setting.number("AGENTBOX_REPLICA_START_TIMEOUT_S", {
    default: 300,
    doc: "Longest a replica may take to answer its health check after it starts (then it is killed and retried).",
  }),
  healthIntervalMs: setting.number("AGENTBOX_REPLICA_HEALTH_INTERVAL_MS", {
    default: 5000,
    atLeast: 100,
    doc: "Health check period of a ready replica (three failures in a row restart it).",
  }),
  requestTimeoutS: setting.number("AGENTBOX_REPLICA_TIMEOUT_S", {
    default: 120,
    doc: "Longest a replica may stay silent while answering (504 `upstream_timeout`).",
  }),
  queueSize: setting.number("AGENTBOX_DEPLOYMENT_QUEUE", {
    default: 64,
    doc: "Requests that may wait for a free replica per deployment (429 past it).",
  }),
  queueTimeoutS: setting.number("AGENTBOX_DEPLOYMENT_QUEUE_TIMEOUT_S", {
    default: 120,
    doc: "Longest a request waits in the queue (503 past it).",
  }),
  idleS: setting.number("AGENTBOX_DEPLOYMENT_IDLE_S", {
    default: 300,
    doc: "A replica without a request for this long is retired, down to `min_replicas`.",
  }),
  drainS: setting.number("AGENTBOX_DEPLOYMENT_DRAIN_S", {
    default: 60,
    doc: "How long a deleted deployment's requests may take to finish before its replicas are killed.",
  }),
  servers: setting.custom("AGENTBOX_DEPLOYMENT_SERVERS", {
    default: {} as Record<string, ServerCommand>,
    defaultDoc: "unset",
    parse: parseServers,
    doc: 'JSON: models served by an OpenAI-compatible server command instead of a GGUF file, e.g. `{"llama3-8b": {"command": ["llama-server", "-m", "/models/llama3-8b.gguf", "--port", "{port}"], "health_path": "/health", "tools": true}}`. `{port}` is replaced by the replica\'s loopback port (required); `health_path` (default `/health`) must answer 200 when it can serve; `tools` lets requests with tools through. Only the commands listed here can ever run.',
  }),
  gpus: setting.custom<DeclaredGpus[] | undefined>("AGENTBOX_NODE_GPUS", {
    default: undefined,
    defaultDoc: "unset: detected (`nvidia-smi`)",
    parse: parseDeclaredGpus,
    doc: "This node's GPUs, declared instead of detected: comma-separated `[COUNT:]MODEL` entries (`2:NVIDIA A100 80GB,NVIDIA T4`), or `none`. What `GET /v1/accelerators` lists, what a deployment's `gpu_model` and `gpu_count` are checked against, and, in a cluster, what each node reports in its heartbeat for placement (`GET /v1/admin/nodes` `gpus`).",
  }),
});

export function loadDeploymentsConfig(env: NodeJS.ProcessEnv = process.env): DeploymentsConfig {
  const s = readSettings(deploymentsSettingsSchema, env);
  return {
    parallel: s.parallel,
    queueSize: s.queueSize,
    queueTimeoutMs: s.queueTimeoutS * 1000,
    idleMs: s.idleS * 1000,
    memoryMb: s.memoryMb,
    startTimeoutMs: s.startTimeoutS * 1000,
    healthIntervalMs: s.healthIntervalMs,
    requestTimeoutMs: s.requestTimeoutS * 1000,
    drainMs: s.drainS * 1000,
    maxReplicas: s.maxReplicas,
    maxPerTenant: s.maxPerTenant,
    maxHostReplicas: s.maxHostReplicas,
    contextSize: s.contextSize,
    threads: s.threads > 0 ? s.threads : undefined,
    servers: s.servers,
    replicaUid: s.replicaUid,
    gpus: s.gpus,
  };
}
