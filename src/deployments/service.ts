// Deployments: a tenant's named model served by its own replica processes behind the gateway
// (`model: <deployment_name>`). This service owns create/list/get/delete, checks the request
// (model, hardware, replica bounds), resolves the model to something a replica can run (a pulled
// GGUF of the data dir, the AGENTBOX_MODEL file, a GGUF stored in /v1/files (copied for the
// deployment), or an operator-allowed server command), restarts
// the deployments of the database at start, and is the gateway's model source for deployments.
// In a cluster each deployment runs on one node (its row's node_id): a node starts its own at
// start, takes over those of a lost node (adoptFrom), and lets go of those another node took
// while it was cut off (keepOwned); it tells the cluster where the others run (nodeOf,
// nodeOfName: their requests are forwarded there), and lists and counts them from the rows. A
// deployment with a gpu_model holds that many of its node's GPUs while it runs: a create that finds
// too few free is 503, and gpus() is what the node's heartbeat reports for placement.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { ApiError } from "../errors.js";
import type { FileService } from "../files/service.js";
import type { ModelScope, ModelSource } from "../inference/providers.js";
import type { ModelInfo, Provider } from "../inference/types.js";
import { resolveModelPath } from "../models/registry.js";
import type { DeploymentRow, DeploymentStore } from "./store.js";
import {
  type Accelerator,
  type Accelerators,
  type GpuHolding,
  type GpuKind,
  freeGpus,
  gpuKinds,
  gpuMatches,
  gpuModelMatches,
} from "./accelerators.js";
import type { DeploymentsConfig } from "./settings.js";
import { Deployment } from "./deployment.js";
import { mayTakeOver } from "./takeover.js";
import type { Launch, ReplicaSettings } from "./replica.js";

/** Same rule as a provider name: what clients put in `model`. */
export const DEPLOYMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export interface CreateDeployment {
  deployment_name: string;
  model_name: string;
  hw_type?: string;
  gpu_model?: string;
  gpu_count?: number;
  min_replicas?: number;
  max_replicas?: number;
}

/** What create answers: the hosted API's three keys, and the deployment's fields (Python clients require some of them). */
export interface CreateResult extends Omit<DeploymentRow, "tenant_id" | "name" | "id" | "reason" | "node_id"> {
  deployment_id: string;
  message: string;
  deployment_name: string;
  user_email: null;
}

export interface DeploymentView extends Omit<DeploymentRow, "tenant_id" | "name" | "id"> {
  deployment_id: string;
  deployment_name: string;
  user_email: string | null;
  replicas: ReturnType<Deployment["replicaInfo"]>;
  queued: number;
}

// The replica entry point next to this file (.ts when the service runs from source under tsx).
const HERE = fileURLToPath(import.meta.url);
const REPLICA_MAIN = path.join(path.dirname(HERE), `replica-main${path.extname(HERE)}`);

function isGguf(file: string): boolean {
  try {
    const fd = fs.openSync(file, "r");
    const magic = Buffer.alloc(4);
    fs.readSync(fd, magic, 0, 4, 0);
    fs.closeSync(fd);
    return magic.toString("latin1") === "GGUF";
  } catch {
    return false;
  }
}

export interface DeploymentServiceDeps {
  store: DeploymentStore;
  config: DeploymentsConfig;
  dataDir: string;
  /** AGENTBOX_MODEL: a GGUF file also deployable under its file name. */
  modelFile: string | undefined;
  accelerators: Accelerators;
  log: (level: "info" | "warn", msg: string, extra?: Record<string, unknown>) => void;
  /** AGENTBOX_NODE_ID: the node a deployment started here is recorded on. */
  nodeId: string;
  /**
   * A node of a cluster (AGENTBOX_REDIS_URL): it starts only the deployments recorded on it. One
   * node alone starts every deployment of its database, whatever node id they were recorded under.
   */
  clustered: boolean;
}

/**
 * Whether GGUF replicas can get a network namespace of their own (util-linux `unshare` and
 * `setpriv`, and the privilege to use them): then they serve on a unix socket and reach no network
 * at all. Checked once; without it they serve on a loopback port.
 */
let isolation: boolean | undefined;
function canIsolate(): boolean {
  if (isolation === undefined) {
    const ok = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: "ignore", timeout: 5000 }).status === 0;
    isolation = ok("unshare", ["--net", "--", "true"]) && ok("setpriv", ["--version"]);
  }
  return isolation;
}

/** Where replicas' sockets live: one directory per deployment, owned by the replicas' uid, under a root-only-listable parent. */
function socketRoot(dataDir: string): string {
  return process.getuid?.() === 0 ? "/run/agentbox-replicas" : path.join(dataDir, "replica-sockets");
}

/** A stored file's id (/v1/files): such a model_name is the GGUF uploaded there. */
const FILE_ID = /^file-[A-Za-z0-9_-]{1,128}$/;

export class DeploymentService implements ModelSource {
  readonly name = "deployments";
  /** Stored files (/v1/files), when the service has them: a deployment may serve an uploaded GGUF. */
  private files: FileService | undefined;
  private readonly byId = new Map<string, Deployment>();
  /** `${tenant}\n${name}` → deployment, for the gateway (deleting ones are not here). */
  private readonly byName = new Map<string, Deployment>();
  /** Rows of creates awaiting their insert: counted by admit() like live deployments. */
  private readonly inserting = new Map<string, DeploymentRow>();
  /** This machine's accelerators once read (init, or the first create that asks for a GPU). */
  private hardware: Accelerator[] = [];

  constructor(private readonly deps: DeploymentServiceDeps) {}

  useFiles(files: FileService): void {
    this.files = files;
  }

  /** Where a deployment's copy of a stored file's model lives (its replicas read it; removed with the deployment). */
  private fileCopy(deploymentId: string): string {
    return path.join(this.deps.dataDir, "deployment-models", `${deploymentId}.gguf`);
  }

  /**
   * Copies a stored file (any backend) to the deployment's own path: replicas need a file on this
   * host, and the stored file may be deleted or expire while the deployment runs.
   */
  private async copyStoredFile(tenantId: string, fileId: string, deploymentId: string): Promise<void> {
    if (!this.files) throw new ApiError("model_not_found", `The model '${fileId}' is not here: stored files are not enabled`);
    const { stream } = await this.files.open(tenantId, fileId);
    const dest = this.fileCopy(deploymentId);
    // Closed to everyone but the service: replicas get their copy as a descriptor, and must not reach
    // another deployment's (another tenant's) model through the directory.
    fs.mkdirSync(path.dirname(dest), { recursive: true, mode: 0o700 });
    fs.chmodSync(path.dirname(dest), 0o700);
    const tmp = `${dest}.partial`;
    try {
      // Readable by the unprivileged replica (it gets the file as a descriptor; the directory may be closed to it).
      await pipeline(stream, fs.createWriteStream(tmp, { mode: 0o644 }));
      if (!isGguf(tmp)) throw new ApiError("invalid_request", `The stored file '${fileId}' is not a GGUF model`);
      fs.renameSync(tmp, dest);
    } finally {
      fs.rmSync(tmp, { force: true });
    }
  }

  /**
   * Starts the deployments the database has for this node (after a restart); finishes deletions
   * cut short. In a cluster, rows of no node (from before nodes were recorded) are claimed by the
   * first node that starts; another node's are left to it.
   */
  async init(): Promise<void> {
    const { store, nodeId, clustered } = this.deps;
    // The node's GPUs, for GET /v1/admin/nodes and (in a cluster, whose heartbeat reports them from
    // the start) placement; read once, in the background when alone (nvidia-smi takes a while).
    const hardware = this.deps.accelerators.list().then((list) => {
      this.hardware = list;
    });
    if (clustered) await hardware;
    for (const row of await store.all()) {
      if (row.status === "deleting") {
        if (clustered && row.node_id !== nodeId && row.node_id !== null) continue;
        await store.remove(row.id);
        fs.rmSync(this.fileCopy(row.id), { force: true });
        continue;
      }
      if (row.node_id !== nodeId) {
        if (clustered && row.node_id !== null) continue;
        if (!(await store.claim(row.id, row.node_id, nodeId))) continue;
        row.node_id = nodeId;
      }
      await this.restart(row);
    }
  }

  /** Starts a deployment of the database here, or keeps it failed (with why) when its model cannot run here. */
  private async restart(row: DeploymentRow): Promise<void> {
    let launch: { launch: (port: number) => Launch; tools: boolean };
    try {
      launch = this.launcher(row.model_name, row, row.gpu_model !== null);
    } catch (err) {
      row.status = "failed";
      row.reason = (err as Error).message;
      await this.deps.store.setStatus(row.id, "failed", row.reason);
      this.start(row, undefined);
      return;
    }
    if (row.status !== "failed") {
      row.status = "creating";
      row.reason = null;
      await this.deps.store.setStatus(row.id, "creating", null);
    }
    this.start(row, row.status === "failed" ? undefined : launch);
  }

  /**
   * Takes over one deployment of a lost node, if one is left that this node can run: its model is
   * here (a stored file's copy is made again from /v1/files) and its min_replicas fit this host's
   * cap. The claim in the database is conditional on the lost node still being the deployment's,
   * so of the nodes that try at once exactly one takes it. The deployment's id, `later` when it is
   * not this node's turn yet (the least loaded of the surviving `executors` go first, takeover.ts;
   * `waitedMs`: since this node found the node lost), or undefined when none is left for this node
   * (one at a time: the survivors share a lost node's deployments).
   */
  async adoptFrom(lostNode: string, executors: readonly string[], waitedMs: number): Promise<string | "later" | undefined> {
    const { store, nodeId, config } = this.deps;
    const rows = await store.all();
    const left = rows.filter((row) => row.node_id === lostNode && row.status !== "deleting" && !this.byId.has(row.id));
    if (left.length === 0) return undefined;
    if (!mayTakeOver(rows, executors, nodeId, waitedMs)) return "later";
    for (const row of left) {
      if (this.reservedReplicas() + row.min_replicas > config.maxHostReplicas) continue;
      // A GPU deployment goes only to a node with as many of its GPUs free.
      if (row.gpu_model !== null && this.freeGpusOf(row.gpu_model) < row.gpu_count) continue;
      const copied = FILE_ID.test(row.model_name) && !fs.existsSync(this.fileCopy(row.id));
      try {
        if (copied) await this.copyStoredFile(row.tenant_id, row.model_name, row.id);
        if (row.status !== "failed") this.launcher(row.model_name, row, row.gpu_model !== null);
      } catch (err) {
        if (copied) fs.rmSync(this.fileCopy(row.id), { force: true });
        this.deps.log("warn", "cannot take over a lost node's deployment here", {
          deployment: row.id,
          node: lostNode,
          error: (err as Error).message,
        });
        continue;
      }
      if (!(await store.claim(row.id, lostNode, nodeId))) {
        if (copied) fs.rmSync(this.fileCopy(row.id), { force: true });
        continue;
      }
      row.node_id = nodeId;
      this.deps.log("info", "took over a lost node's deployment", { deployment: row.id, node: lostNode });
      await this.restart(row);
      return row.id;
    }
    return undefined;
  }

  /**
   * Stops here the deployments another node has taken over (this node was cut off long enough to be
   * declared lost): their replicas end, their rows stay with the node that has them now.
   */
  async keepOwned(): Promise<void> {
    if (this.byId.size === 0) return;
    const owners = new Map((await this.deps.store.all()).map((row) => [row.id, row.node_id]));
    for (const [id, d] of this.byId) {
      const owner = owners.get(id);
      // No row: created since the rows were read (or being removed); not another node's either way.
      if (owner === undefined || owner === this.deps.nodeId || d.row.status === "deleting") continue;
      this.byId.delete(id);
      if (this.byName.get(`${d.row.tenant_id}\n${d.row.name}`) === d) this.byName.delete(`${d.row.tenant_id}\n${d.row.name}`);
      this.deps.log("warn", "a deployment was taken over by another node; stopping its replicas here", { deployment: id, node: owner });
      await d.close();
    }
  }

  /** How to run a model: an allowed server command, a pulled GGUF, or the AGENTBOX_MODEL file. */
  private launcher(
    model: string,
    row: Pick<DeploymentRow, "id" | "name">,
    gpu: boolean,
  ): { launch: (port: number) => Launch; tools: boolean } {
    const deploymentName = row.name;
    const { config } = this.deps;
    const server = Object.hasOwn(config.servers, model) ? config.servers[model] : undefined;
    const env = { PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin", HOME: process.env.HOME ?? "/" };
    if (server) {
      const [command, ...args] = server.command as [string, ...string[]];
      return {
        tools: server.tools,
        launch: (port) => ({ command, args: args.map((a) => a.replaceAll("{port}", String(port))), env, healthPath: server.healthPath }),
      };
    }
    let file = FILE_ID.test(model) ? this.fileCopy(row.id) : resolveModelPath(this.deps.dataDir, model);
    if (file && !fs.existsSync(file)) file = undefined;
    const fixed = this.deps.modelFile;
    if (!file && fixed && path.basename(fixed).replace(/\.gguf$/i, "") === model) file = path.resolve(fixed);
    if (!file) {
      throw new ApiError(
        "model_not_found",
        `The model '${model}' is not here: pull it first (agentbox models pull), or ask the operator to allow a server for it`,
      );
    }
    if (!isGguf(file)) throw new ApiError("invalid_request", `The model '${model}' is not a GGUF file`);
    const modelPath = file;
    // The engine parses the model file natively; a file anyone may read (every stored-file copy is)
    // is parsed by a process with no privileges: it gets the file as an open descriptor and runs as
    // AGENTBOX_REPLICA_UID. An operator's file only its owner may read runs as the service's user.
    const readable = (fs.statSync(modelPath).mode & 0o004) !== 0;
    const uid = readable && config.replicaUid !== undefined && config.replicaUid !== process.getuid?.() ? config.replicaUid : undefined;
    const isolated = canIsolate();
    const sockets = path.join(socketRoot(this.deps.dataDir), row.id);
    return {
      tools: false,
      launch: (port) => {
        const loader = [process.execPath, ...process.execArgv, REPLICA_MAIN];
        let socket: string | undefined;
        let argv = loader;
        if (isolated) {
          // Its own (empty) network namespace, then its uid: it can serve its socket and nothing else.
          fs.mkdirSync(path.dirname(sockets), { recursive: true, mode: 0o711 });
          fs.mkdirSync(sockets, { recursive: true, mode: 0o700 });
          if (uid !== undefined) fs.chownSync(sockets, uid, uid);
          socket = path.join(sockets, `${port}.sock`);
          fs.rmSync(socket, { force: true });
          const drop = uid === undefined ? [] : ["setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "--no-new-privs"];
          argv = ["unshare", "--net", "--", ...drop, ...loader];
        }
        const settings: ReplicaSettings = {
          modelPath: "/proc/self/fd/3",
          modelName: deploymentName,
          port,
          socket,
          contextSize: config.contextSize,
          parallel: config.parallel,
          threads: config.threads,
          gpu,
        };
        return {
          // The same loader flags as this process (tsx when running from source).
          command: argv[0] as string,
          args: argv.slice(1),
          env: { ...env, AGENTBOX_REPLICA: JSON.stringify(settings) },
          healthPath: "/health",
          files: [modelPath],
          // Isolated, setpriv drops the uid after unshare (which needs root); otherwise spawn does.
          uid: isolated ? undefined : uid,
          socket,
        };
      },
    };
  }

  private start(row: DeploymentRow, launch: { launch: (port: number) => Launch; tools: boolean } | undefined): Deployment {
    const { config, store, log } = this.deps;
    // A failed deployment keeps its row (and its reason) with no replicas.
    const started = launch ?? { launch: () => ({ command: "false", args: [], env: {}, healthPath: "/" }), tools: false };
    const d = new Deployment(row, started.launch, started.tools, config, {
      onStatus: (dep) => {
        store
          .setStatus(dep.row.id, dep.row.status, dep.row.reason)
          .catch((err: Error) => log("warn", "deployment status not stored", { deployment: dep.row.id, error: err.message }));
        log(dep.row.status === "failed" ? "warn" : "info", "deployment status", {
          deployment: dep.row.id,
          status: dep.row.status,
          reason: dep.row.reason,
        });
      },
      log: (msg, extra) => log("info", msg, extra),
      warn: (msg, extra) => log("warn", msg, extra),
      canGrow: () => this.activeReplicas() < config.maxHostReplicas,
    });
    this.byId.set(row.id, d);
    if (row.status !== "deleting") this.byName.set(`${row.tenant_id}\n${row.name}`, d);
    return d;
  }

  /**
   * Refuses a deployment that does not fit: the tenant has that name or as many as allowed, or the
   * host's min_replicas would go over its cap. Rows being inserted count (`inserting`): checked
   * and reserved in one synchronous step, so two creates cannot both pass while one awaits the store.
   */
  /** Replicas the min_replicas of this node's deployments (and of creates being inserted) always hold. */
  private reservedReplicas(): number {
    const live = [...[...this.byId.values()].map((d) => d.row), ...this.inserting.values()];
    return live.reduce((n, row) => n + (row.status === "deleting" || row.status === "failed" ? 0 : row.min_replicas), 0);
  }

  /** The GPUs this node's deployments (and creates being inserted) hold: a failed one holds none. */
  private gpuHoldings(): GpuHolding[] {
    const live = [...[...this.byId.values()].map((d) => d.row), ...this.inserting.values()];
    return live.flatMap((row) =>
      row.gpu_model !== null && row.status !== "failed" ? [{ gpuModel: row.gpu_model, count: row.gpu_count }] : [],
    );
  }

  /** How many of this node's GPUs that `gpuModel` names no deployment holds. */
  private freeGpusOf(gpuModel: string): number {
    return freeGpus(this.hardware, this.gpuHoldings()).filter((a) => gpuMatches(gpuModel, a)).length;
  }

  /** This node's GPUs by model and how many of each no deployment holds (its heartbeat reports them for placement). */
  gpus(): GpuKind[] {
    return gpuKinds(this.hardware, this.gpuHoldings());
  }

  /**
   * What a create's body (as a client sent it, before validation) asks of GPUs, for placing it on
   * a node that has them: undefined for a CPU deployment (no gpu_model, or one naming the CPU).
   */
  async gpuRequest(body: unknown): Promise<{ model: string; count: number; matches: (hwModel: string) => boolean } | undefined> {
    if (typeof body !== "object" || body === null) return undefined;
    const { gpu_model: gpuModel, gpu_count: gpuCount } = body as Record<string, unknown>;
    if (typeof gpuModel !== "string" || gpuModel === "" || (await this.deps.accelerators.isCpu(gpuModel))) return undefined;
    const count = typeof gpuCount === "number" && Number.isInteger(gpuCount) && gpuCount >= 1 ? gpuCount : 1;
    return { model: gpuModel, count, matches: (hwModel) => gpuModelMatches(gpuModel, hwModel) };
  }

  /** `elsewhere`: the tenant's deployments on other nodes of a cluster (they count towards its limit). */
  private admit(tenantId: string, name: string, min: number, elsewhere: number, gpu?: GpuHolding): void {
    const { config } = this.deps;
    if (gpu) {
      const free = this.freeGpusOf(gpu.gpuModel);
      if (free < gpu.count)
        throw new ApiError(
          "at_capacity",
          `This host's GPUs '${gpu.gpuModel}' are held by other deployments: ${free} free, ${gpu.count} asked; retry once one is deleted`,
          30,
        );
    }
    const live = [...[...this.byId.values()].map((d) => d.row), ...this.inserting.values()];
    const mine = live.filter((row) => row.tenant_id === tenantId && row.status !== "deleting");
    if (mine.some((row) => row.name === name)) throw new ApiError("conflict", `A deployment named '${name}' already exists`);
    // Every deployment's min_replicas always run: they must fit the host's cap together.
    const reserved = this.reservedReplicas();
    if (reserved + min > config.maxHostReplicas)
      throw new ApiError(
        "at_capacity",
        `This host runs at most ${config.maxHostReplicas} replicas and ${reserved} are reserved by min_replicas of existing deployments`,
        60,
      );
    if (mine.length + elsewhere >= config.maxPerTenant)
      throw new ApiError("quota_exceeded", `This tenant has ${mine.length + elsewhere} deployments, the most allowed; delete one first`);
  }

  async create(tenantId: string, input: CreateDeployment): Promise<CreateResult> {
    const { config } = this.deps;
    const name = input.deployment_name;
    if (!DEPLOYMENT_NAME.test(name))
      throw new ApiError("invalid_request", "deployment_name must be 1-64 letters, digits, '_', '.', '-', starting with a letter or digit");
    const min = input.min_replicas ?? 1;
    const max = input.max_replicas ?? Math.max(1, min);
    if (!Number.isInteger(min) || min < 1)
      throw new ApiError("invalid_request", `min_replicas must be an integer of at least 1, got ${min}`);
    if (!Number.isInteger(max) || max < 1)
      throw new ApiError("invalid_request", `max_replicas must be an integer of at least 1, got ${max}`);
    if (min > max) throw new ApiError("invalid_request", `min_replicas (${min}) is more than max_replicas (${max})`);
    if (max > config.maxReplicas)
      throw new ApiError(
        "invalid_request",
        `max_replicas (${max}) is over this host's limit of ${config.maxReplicas} replicas per deployment`,
      );
    const hwType = (input.hw_type ?? "cpu").toLowerCase();
    if (!["cpu", "gpu", "dedicated"].includes(hwType))
      throw new ApiError("invalid_request", `hw_type must be 'cpu', 'gpu' or 'dedicated', got '${input.hw_type}'`);
    // A gpu_model naming the CPU ("cpu") is a CPU deployment: some clients always send one.
    const gpuModel = input.gpu_model && !(await this.deps.accelerators.isCpu(input.gpu_model)) ? input.gpu_model : null;
    const gpuCount = input.gpu_count ?? (gpuModel ? 1 : 0);
    if (hwType === "gpu" && !gpuModel)
      throw new ApiError("invalid_request", "hw_type 'gpu' needs a gpu_model (GET /v1/accelerators lists them)");
    if (gpuModel !== null) {
      if (gpuCount < 1) throw new ApiError("invalid_request", "gpu_count must be at least 1 with a gpu_model");
      if (!(await this.deps.accelerators.hasGpu(gpuModel, gpuCount)))
        throw new ApiError(
          "invalid_request",
          `This host has no ${gpuCount > 1 ? `${gpuCount} GPUs` : "GPU"} '${gpuModel}' (GET /v1/accelerators lists its hardware; hw_type 'cpu' runs on the CPU)`,
        );
    }
    // In a cluster the tenant's limit holds over every node (creates are placed by load, so they spread).
    const elsewhere = this.deps.clustered ? await this.deployedElsewhere(tenantId) : 0;
    // A GPU deployment needs that many GPUs no other deployment here holds (503 until one is deleted).
    const gpu = gpuModel === null ? undefined : { gpuModel, count: gpuCount };
    if (gpu) this.hardware = await this.deps.accelerators.list();
    this.admit(tenantId, name, min, elsewhere, gpu);
    const id = `dep_${crypto.randomBytes(10).toString("hex")}`;
    if (FILE_ID.test(input.model_name)) await this.copyStoredFile(tenantId, input.model_name, id);
    let launch: ReturnType<DeploymentService["launcher"]>;
    try {
      launch = this.launcher(input.model_name, { id, name }, gpuModel !== null);
    } catch (err) {
      fs.rmSync(this.fileCopy(id), { force: true });
      throw err;
    }
    const row: DeploymentRow = {
      id,
      tenant_id: tenantId,
      name,
      model_name: input.model_name,
      hw_type: hwType,
      gpu_model: gpuModel,
      gpu_count: gpuCount,
      min_replicas: min,
      max_replicas: max,
      status: "creating",
      reason: null,
      created_at: new Date().toISOString(),
      node_id: this.deps.nodeId,
    };
    // Checked again after the awaits above, and reserved until the row is in (or refused).
    try {
      this.admit(tenantId, name, min, elsewhere, gpu);
    } catch (err) {
      fs.rmSync(this.fileCopy(id), { force: true });
      throw err;
    }
    this.inserting.set(id, row);
    let inserted: boolean;
    try {
      // The row's uniqueness is the last word (a deleting deployment of that name may still be in the table).
      inserted = await this.deps.store.insert(row);
    } finally {
      this.inserting.delete(id);
    }
    if (!inserted) {
      fs.rmSync(this.fileCopy(id), { force: true });
      throw new ApiError("conflict", `A deployment named '${name}' already exists`);
    }
    this.start(row, launch);
    const { tenant_id: _, id: deployment_id, name: deployment_name, reason: __, node_id: ___, ...rest } = row;
    return {
      deployment_id,
      message: `Deployment '${name}' is being created with ${min} replica${min === 1 ? "" : "s"}`,
      ...rest,
      deployment_name,
      user_email: null,
    };
  }

  /** The tenant's deployments that other nodes run (not being deleted), from the shared rows. */
  private async deployedElsewhere(tenantId: string): Promise<number> {
    const rows = await this.deps.store.ofTenant(tenantId);
    return rows.filter((row) => row.status !== "deleting" && !this.byId.has(row.id) && !this.inserting.has(row.id)).length;
  }

  private activeReplicas(): number {
    let n = 0;
    for (const d of this.byId.values()) n += d.active().length;
    return n;
  }

  private view(d: Deployment): DeploymentView {
    const { id, tenant_id: _, name, ...rest } = d.row;
    return {
      deployment_id: id,
      deployment_name: name,
      user_email: null,
      ...rest,
      replicas: d.replicaInfo(),
      queued: d.queued,
    };
  }

  /** A deployment another node runs, as its row says (its replicas are that node's to tell: GET of it is forwarded there). */
  private rowView(row: DeploymentRow): DeploymentView {
    const { id, tenant_id: _, name, ...rest } = row;
    return { deployment_id: id, deployment_name: name, user_email: null, ...rest, replicas: [], queued: 0 };
  }

  /** The tenant's deployments: this node's, or in a cluster every node's (from the shared rows). */
  async list(tenantId: string): Promise<DeploymentView[]> {
    if (!this.deps.clustered) return [...this.byId.values()].filter((d) => d.row.tenant_id === tenantId).map((d) => this.view(d));
    return (await this.deps.store.ofTenant(tenantId)).map((row) => {
      const d = this.byId.get(row.id);
      return d ? this.view(d) : this.rowView(row);
    });
  }

  private own(tenantId: string, id: string): Deployment {
    const d = this.byId.get(id);
    // Another tenant's deployment is as absent as a missing one.
    if (!d || d.row.tenant_id !== tenantId) throw new ApiError("not_found", `Deployment '${id}' was not found`);
    return d;
  }

  /**
   * One deployment. In a cluster a deployment this node does not run is forwarded to its node
   * (src/cluster/hook.ts); what reaches this node anyway (its node lost, being taken over) is
   * answered from its row.
   */
  async get(tenantId: string, id: string): Promise<DeploymentView> {
    const d = this.byId.get(id);
    if (d || !this.deps.clustered) return this.view(this.own(tenantId, id));
    const row = await this.deps.store.get(id);
    if (!row || row.tenant_id !== tenantId) throw new ApiError("not_found", `Deployment '${id}' was not found`);
    return this.rowView(row);
  }

  // --- where a deployment runs, for the cluster's forwarding ---

  /** Whether this node runs the deployment (then its requests are answered here). */
  runsHere(id: string): boolean {
    return this.byId.has(id);
  }

  /** The node that runs a tenant's deployment when that is not this one; undefined: answered here (or a 404). */
  async nodeOf(tenantId: string, id: string): Promise<string | undefined> {
    if (this.byId.has(id)) return undefined;
    return this.elsewhere(await this.deps.store.get(id), tenantId, true);
  }

  /** The node that serves a tenant's deployment name (`model`) when that is not this one. */
  async nodeOfName(tenantId: string, name: string): Promise<string | undefined> {
    if (this.byName.has(`${tenantId}\n${name}`)) return undefined;
    return this.elsewhere(await this.deps.store.named(tenantId, name), tenantId, false);
  }

  /** `deleting`: whether one being deleted counts (its status and delete do; the gateway no longer routes its name). */
  private elsewhere(row: DeploymentRow | undefined, tenantId: string, deleting: boolean): string | undefined {
    if (!row || row.tenant_id !== tenantId || row.node_id === null || (row.status === "deleting" && !deleting)) return undefined;
    return row.node_id === this.deps.nodeId ? undefined : row.node_id;
  }

  /**
   * Deletes a deployment: from now on the gateway no longer routes its name; requests already
   * queued or running finish (up to the drain time); then its replicas stop and its row goes.
   */
  delete(tenantId: string, id: string): { message: string; deployment_id: string; status: string } {
    const d = this.own(tenantId, id);
    if (d.row.status !== "deleting") {
      this.byName.delete(`${tenantId}\n${d.row.name}`);
      void d.drain().finally(() => {
        this.byId.delete(id);
        this.deps.store
          .remove(id)
          .catch((err: Error) => this.deps.log("warn", "deployment row not removed", { deployment: id, error: err.message }));
        fs.rmSync(this.fileCopy(id), { force: true });
        fs.rmSync(path.join(socketRoot(this.deps.dataDir), id), { recursive: true, force: true });
      });
    }
    return { message: `Deployment '${d.row.name}' is being deleted`, deployment_id: id, status: d.row.status };
  }

  // --- the gateway's model source ---

  models(scope?: ModelScope): ModelInfo[] {
    if (!scope) return [];
    const out: ModelInfo[] = [];
    for (const d of this.byName.values()) if (d.row.tenant_id === scope.tenantId) out.push(...d.models());
    return out;
  }

  resolve(model: string, scope?: ModelScope): Provider | undefined {
    if (!scope) return undefined;
    return this.byName.get(`${scope.tenantId}\n${model}`);
  }

  /**
   * In a cluster, the tenant's deployments other nodes run, as the gateway lists them (from the
   * shared rows: one read, whatever the number of nodes; the gateway's requests for them are
   * forwarded to their nodes). None when alone.
   */
  async modelsElsewhere(tenantId: string): Promise<ModelInfo[]> {
    if (!this.deps.clustered) return [];
    const out: ModelInfo[] = [];
    for (const row of await this.deps.store.ofTenant(tenantId)) {
      if (row.status === "deleting" || this.byName.has(`${tenantId}\n${row.name}`)) continue;
      const created = Math.floor(Date.parse(row.created_at) / 1000);
      const at = Number.isFinite(created) ? created : 0;
      // The capabilities the gateway gives a deployment it runs (those of a model source).
      out.push({ id: row.name, object: "model", created: at, owned_by: "deployment", capabilities: ["chat", "completions"] });
    }
    return out;
  }

  async close(): Promise<void> {
    await Promise.all([...this.byId.values()].map((d) => d.close()));
  }
}
