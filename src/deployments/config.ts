// Settings of deployments (/v1/deployments): replica sizing, the router's queue, autoscaling and
// health-check timing, and the OpenAI-compatible server commands the operator allows as models.
// Read once at start-up by src/config.ts.
import os from "node:os";
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
}

type Num = (name: string, fallback: number) => number;

function parseServers(raw: string | undefined): Record<string, ServerCommand> {
  if (!raw) return {};
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

function replicaUid(): number | undefined {
  const raw = process.env.AGENTBOX_REPLICA_UID;
  if (raw === "-1") return undefined;
  if (raw === undefined || raw === "") return 65534;
  const uid = Number(raw);
  if (!Number.isInteger(uid) || uid < 0) throw new Error(`AGENTBOX_REPLICA_UID must be a uid (or -1 for the service's own), got '${raw}'`);
  return uid;
}

export function loadDeploymentsConfig(num: Num): DeploymentsConfig {
  // Replicas share the host's cores: llama.cpp's default (every core) in several replicas at once
  // makes their threads spin against each other, which is many times slower than one thread each.
  const threads = num("AGENTBOX_REPLICA_THREADS", Math.max(1, Math.floor(os.availableParallelism() / 2)));
  return {
    parallel: Math.max(1, num("AGENTBOX_REPLICA_PARALLEL", 1)),
    queueSize: num("AGENTBOX_DEPLOYMENT_QUEUE", 64),
    queueTimeoutMs: num("AGENTBOX_DEPLOYMENT_QUEUE_TIMEOUT_S", 120) * 1000,
    idleMs: num("AGENTBOX_DEPLOYMENT_IDLE_S", 300) * 1000,
    memoryMb: num("AGENTBOX_REPLICA_MEMORY_MB", 4096),
    startTimeoutMs: num("AGENTBOX_REPLICA_START_TIMEOUT_S", 300) * 1000,
    healthIntervalMs: Math.max(100, num("AGENTBOX_REPLICA_HEALTH_INTERVAL_MS", 5000)),
    requestTimeoutMs: num("AGENTBOX_REPLICA_TIMEOUT_S", 120) * 1000,
    drainMs: num("AGENTBOX_DEPLOYMENT_DRAIN_S", 60) * 1000,
    maxReplicas: Math.max(1, num("AGENTBOX_DEPLOYMENT_MAX_REPLICAS", Math.max(2, os.availableParallelism()))),
    maxPerTenant: num("AGENTBOX_MAX_DEPLOYMENTS_PER_TENANT", 8),
    // Each replica is a process with its own model copy in memory and its own threads: past a few
    // per core they only take turns.
    maxHostReplicas: Math.max(1, num("AGENTBOX_MAX_REPLICAS", Math.max(4, 2 * os.availableParallelism()))),
    contextSize: num("AGENTBOX_REPLICA_CONTEXT_SIZE", 4096),
    threads: threads > 0 ? threads : undefined,
    servers: parseServers(process.env.AGENTBOX_DEPLOYMENT_SERVERS),
    // nobody: a GGUF parser bug reached through a crafted model file gets no privileges. -1: off.
    replicaUid: replicaUid(),
  };
}
