// Tenants' own templates: build requests (queued, run a few at a time under a deadline), their
// status and logs, the catalogue a tenant sees (built-ins and its own), deletion, and resolving a
// template for a sandbox's start. Knows nothing of HTTP; the sandbox manager asks it through
// TemplateCatalog (src/sandbox/manager.ts).
import { execFile } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import { Limiter } from "../common/limiter.js";
import { ApiError, invalid } from "../errors.js";
import type { EgressLogEntry } from "../network/egress.js";
import { type NetworkPolicy, PolicyError, parsePolicy } from "../network/policy.js";
import type { Box } from "../sandbox/box.js";
import type { CustomTemplate } from "../sandbox/manager.js";
import type { Limits } from "../sandbox/settings.js";
import type { SnapshotFiles } from "../sandbox/snapshots.js";
import type { Template } from "../sandbox/templates.js";
import type { BuildLog } from "./build-log.js";
import { BuildLogs } from "./build-logs.js";
import { BuildCgroup } from "./build-cgroup.js";
import { FairQueue } from "./build-queue.js";
import { warmBytecode } from "./bytecode.js";
import { type CopyPart, contentDigest, CopyError, packTree, receiveFile, requestCopy, type TemplatePeers, unpackTree } from "./copies.js";
import { pullImage, type RegistryAuth, ToolError } from "./pull.js";
import { type StagePlan as DockerfileStage, readContext, translateDockerfile } from "./dockerfile.js";
import { checkAllowed, type ImageRef, parseImageRef } from "./reference.js";
import type { RootfsStore, TreeLimits } from "./rootfs.js";
import type { TemplateSettings } from "./settings.js";
import { checkSteps, runSteps, type Step } from "./steps.js";
import type { BuildRecord, TemplateFiles, TemplateRecord, TemplateStore } from "./store.js";

export interface BuildInput {
  name: string;
  description?: string;
  dockerImage?: string;
  dockerfile?: string;
  /** The dockerfile's context: relative path → base64 content. */
  context?: Record<string, string>;
  buildSteps?: Step[];
  baseTemplateId?: string;
  vcpuCount?: number;
  memoryMb?: number;
  diskMb?: number;
  startCmd?: string;
  readyCmd?: string;
  environment?: Record<string, string>;
  tags?: Record<string, string>;
  registryAuth?: RegistryAuth;
  /** What the build's steps may reach (through the egress proxy); absent: no network. */
  network?: { allow_out?: string[]; deny_out?: string[] };
}

/**
 * Egress for a build's sandbox, as the network area gives any sandbox (NetworkService.attachBuild):
 * set after both areas are open. Returns what ends it.
 */
export interface BuildNetwork {
  attach(tenantId: string, box: Box, policy: NetworkPolicy, onEntry: (entry: EgressLogEntry) => void): Promise<() => void>;
}

/** A running sandbox of the tenant's, to save as a template: its box and the template it runs. */
export interface SandboxSource {
  box: Box;
  template: string;
}

export interface TemplateDeps {
  store: TemplateStore;
  /** This node's id (AGENTBOX_NODE_ID): the records say which nodes hold which template's files. */
  nodeId: string;
  rootfs: RootfsStore;
  /** Archives of templates' /home/user files, one per template (named by its id). */
  homes: SnapshotFiles;
  settings: TemplateSettings;
  /** The service's sandbox limits: a template's are its own, never above them. */
  limits: Limits;
  builtIns: Template[];
  /** Live sandboxes started from a template (one in use is not deleted). */
  sandboxesOf(templateId: string): number;
  /** A running sandbox of the tenant's (404 when it is not theirs, 400 when it ended, 409 when paused). */
  sandbox(tenantId: string, sandboxId: string): Promise<SandboxSource>;
  /** Gives back the warm sandboxes of a template's pool (it is being deleted). */
  dropPool(templateId: string): Promise<void>;
  /** Started sandboxes waiting in the template's warm pool now. */
  poolSize(templateId: string): number;
  /** A sandbox for build steps (SandboxManager.buildBox). */
  buildBox(prepare: (uid: number) => Promise<CustomTemplate>): Promise<{ box: Box; release(): Promise<void> }>;
  log: (fields: Record<string, unknown>, msg: string) => void;
}

/** One stage of a build: its base and its steps. */
interface StagePlan {
  /** The image to pull, or... */
  ref?: ImageRef;
  auth?: RegistryAuth;
  /** ...the tenant's template to start from, or... */
  base?: TemplateRecord;
  /** ...an earlier stage's result (a multi-stage Dockerfile). */
  fromStage?: number;
  steps: Step[];
}

/** A built stage's root filesystem. */
interface Built {
  digest: string;
  python: string | null;
}

/** What a stage's build needs of its build. */
interface StageContext {
  t: TemplateRecord;
  b: BuildRecord;
  log: BuildLog;
  work: string;
  deadline: AbortSignal;
  deadlineAt: number;
  transient: string[];
  /** The build's egress policy (absent: its sandbox has no network). */
  network?: NetworkPolicy;
  /** Connections the build's network refused (`host:port (why)`), for the build's error. */
  refused: string[];
  /** The build's memory group for its host-side work (absent: the host would not make one). */
  group?: BuildCgroup;
}

/** What a build does, checked before anything is recorded. */
interface Plan extends StagePlan {
  /** A multi-stage Dockerfile's stages before the last, built first in order. */
  stages?: StagePlan[];
  /** What a dockerfile sets for the template's sandboxes (ENV, WORKDIR, LABEL). */
  environment?: Record<string, string>;
  workdir?: string | null;
  labels?: Record<string, string>;
  /** The request's `network`: what every stage's steps may reach. */
  network?: NetworkPolicy;
}

const exec = promisify(execFile);

const notFound = (id: string) => new ApiError("template_not_found", `Template '${id}' does not exist`);
const nameTaken = (name: string) => new ApiError("conflict", `A template named '${name}' exists already; delete it or choose another name`);
const noRootfs = (id: string) =>
  new ApiError(
    "invalid_request",
    `Template '${id}' was saved from a sandbox of a built-in template: it has no root filesystem of its own to build on`,
  );
const buildNotFound = (id: string) => new ApiError("not_found", `Build '${id}' does not exist`);

/** Why a build ended early on request (DELETE /templates/builds/{id}): the abort reason its tools and steps see. */
class BuildCancelled extends Error {
  constructor() {
    super("cancelled by request");
  }
}

/** A build of this node's that has not ended: waiting in the queue or running. */
interface ActiveBuild {
  template: TemplateRecord;
  build: BuildRecord;
  log: BuildLog;
  /** Aborted at the build's deadline or by a cancel: its tools are killed (and on a cancel its sandbox released). */
  abort: AbortController;
  /** Settles once the build has recorded its end and given back what it held. */
  ended: Promise<void>;
  /** Gives back what it holds (its bases in use) and settles `ended`. */
  release(): void;
}

/**
 * A build's egress policy: the request's `network` (allow_out, deny_out), never internet access
 * at large; none (no network at all) unless it lists something to reach.
 */
function buildPolicy(input: BuildInput["network"]): NetworkPolicy | undefined {
  let policy: NetworkPolicy;
  try {
    policy = parsePolicy({ internet_access: false, ...input });
  } catch (err) {
    if (err instanceof PolicyError) throw invalid(`network: ${err.message}`);
    throw err;
  }
  return policy.allowOut.length > 0 ? policy : undefined;
}

/** The nine keys of a template list item. */
export function templateItem(t: TemplateRecord): Template {
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    vcpu_count: t.vcpuCount,
    memory_mb: t.memoryMb,
    disk_size_mb: t.diskMb,
    visibility: "private",
    created_at: t.createdAt,
    updated_at: t.updatedAt,
  };
}

/** The image a build's template stands on: its last stage's base, followed through earlier stages. */
function imageOf(plan: Plan): string | null {
  let stage: StagePlan | undefined = plan;
  while (stage?.fromStage !== undefined) stage = plan.stages?.[stage.fromStage];
  if (stage?.ref) return `${stage.ref.registry}/${stage.ref.repository}${stage.ref.reference}`;
  return stage?.base?.baseImage ?? null;
}

export class TemplateService {
  private readonly logs: BuildLogs;
  private readonly queue: FairQueue;
  /** This node's builds that have not ended, by id (a cancel finds them here). */
  private readonly active = new Map<string, ActiveBuild>();
  /** Templates that running builds start from, with how many: one cannot be deleted under its build. */
  private readonly basesInUse = new Map<string, number>();
  /**
   * Builds are admitted and templates deleted one at a time: each checks (name, count, queue, bases
   * in use) and then writes, and the store's awaits would otherwise let another in between.
   */
  private readonly changes = new Limiter(1);
  /** Each build's last write: a build's writes land in order, progress reports included (they do not wait for theirs). */
  private readonly writes = new Map<string, Promise<void>>();

  private net: BuildNetwork | undefined;
  /** The other nodes of a cluster, to fetch a template's files from; absent on one node. */
  private peers: TemplatePeers | undefined;
  /** Templates this node holds the files of and has recorded so (no write at each create). */
  private readonly held = new Set<string>();
  /** Fetches in progress, per template: a node's creates of one template wait for one fetch. */
  private readonly fetching = new Map<string, Promise<void>>();
  /** Content digests being computed, per root filesystem (its first copy served). */
  private readonly digesting = new Map<string, Promise<string>>();

  constructor(private readonly d: TemplateDeps) {
    const s = d.settings;
    this.logs = new BuildLogs({
      dir: path.join(s.dir, "logs"),
      maxBytes: s.logKb * 1024,
      graceMs: s.logGraceS * 1000,
      exists: async (id) => (await d.store.build(id)) != null,
      log: d.log,
    });
    this.queue = new FairQueue({
      parallel: s.parallelBuilds,
      maxWaiting: s.buildQueue,
      perTenant: s.buildsPerTenant,
      onError: (err, job) => d.log({ err, build_id: job.id }, "template build could not record its end"),
    });
  }

  /** Build logs held in memory now and their bytes; builds waiting and running (for metrics). */
  buildCounts(): { logs: number; logBytes: number; waiting: number; running: number } {
    const { count, bytes } = this.logs.inMemory();
    return { logs: count, logBytes: bytes, waiting: this.queue.waitingTotal, running: this.queue.runningTotal };
  }

  /** Builds whose request gives `network` reach it through this (the network area opens after this one). */
  useNetwork(net: BuildNetwork): void {
    this.net = net;
  }

  /** In a cluster: a template whose files are on other nodes is fetched from one of them (the cluster opens after this area). */
  usePeers(peers: TemplatePeers): void {
    this.peers = peers;
  }

  /** After a restart: builds that were running are failed (their scratch is gone), unused root filesystems removed. */
  async init(): Promise<void> {
    for (const b of await this.d.store.unfinishedBuilds()) {
      await this.finish(b, "the service restarted during the build; start it again");
      await this.d.store.setState(b.templateId, "failed", new Date().toISOString());
    }
    await this.d.rootfs.sweepBuilds((dir) => exec("umount", ["-l", dir]).then(() => {}));
    await this.logs.sweep(true);
    await BuildCgroup.sweep(this.d.settings.dir).catch((err) => this.d.log({ err }, "template build cgroups not swept"));
    const used = new Set(await this.d.store.allRootfs());
    for (const digest of this.d.rootfs.existing()) if (!used.has(digest)) await this.d.rootfs.remove(digest);
    await this.d.homes.sweep(async (id) => (await this.d.store.template(id))?.home != null);
    // What this node holds, as the records say it (placement and other nodes' fetches read them).
    for (const f of await this.d.store.readyFiles()) if (this.holds(f)) this.held.add(f.id);
    for (const id of await this.d.store.copiesOn(this.d.nodeId)) if (!this.held.has(id)) await this.d.store.removeCopy(id, this.d.nodeId);
    for (const id of this.held) await this.d.store.addCopy(id, this.d.nodeId);
  }

  /** Whether this node has the template's files (a template without any has none to have). */
  private holds(t: TemplateFiles): boolean {
    if (!(t.rootfs || t.home)) return false;
    return (!t.rootfs || this.d.rootfs.has(t.rootfs)) && (!t.home || fs.existsSync(this.d.homes.pathOf(t.id)));
  }

  /** Records that this node holds the template's files. */
  private async recordCopy(templateId: string): Promise<void> {
    await this.d.store.addCopy(templateId, this.d.nodeId);
    this.held.add(templateId);
  }

  /**
   * The nodes that hold the files of the tenant's template `idOrName` (placement prefers them);
   * undefined for a built-in or a template the tenant does not have (placed by load alone).
   */
  async copiesOf(tenantId: string, idOrName: string): Promise<string[] | undefined> {
    if (this.d.builtIns.some((t) => t.id === idOrName)) return undefined;
    const t = await this.find(tenantId, idOrName);
    return t ? this.d.store.copies(t.id) : undefined;
  }

  /**
   * This node's copy of a template's files, for another node that fetches them: a tar stream of
   * its root filesystem (its content digest recorded first, for the fetcher to check) or the
   * archive of its saved /home/user. Undefined when this node does not hold it.
   */
  async copySource(templateId: string, part: CopyPart): Promise<Readable | undefined> {
    const t = await this.d.store.template(templateId);
    if (t?.state !== "ready") return undefined;
    if (part === "home") {
      const file = this.d.homes.pathOf(t.id);
      return t.home && fs.existsSync(file) ? fs.createReadStream(file) : undefined;
    }
    const rootfs = t.rootfs;
    if (!rootfs || !this.d.rootfs.has(rootfs)) return undefined;
    if ((await this.d.store.contentDigest(rootfs)) === undefined) {
      let digesting = this.digesting.get(rootfs);
      if (!digesting) {
        digesting = contentDigest(this.d.rootfs.pathOf(rootfs)).finally(() => this.digesting.delete(rootfs));
        this.digesting.set(rootfs, digesting);
      }
      await this.d.store.setContentDigest(rootfs, await digesting);
    }
    return packTree(this.d.rootfs.pathOf(rootfs));
  }

  /** Makes sure this node has the template's files: fetched from a node that holds them when it lacks them. */
  private async ensureFiles(t: TemplateRecord, asked: string): Promise<void> {
    if (this.holds(t)) {
      // Files another template brought here (a shared root filesystem): recorded once.
      if (!this.held.has(t.id))
        await this.recordCopy(t.id).catch((err) => this.d.log({ err, template_id: t.id }, "template copy not recorded"));
      return;
    }
    // Recorded here but gone (removed by hand, a disk replaced): no longer offered to placement.
    if (this.held.delete(t.id)) await this.d.store.removeCopy(t.id, this.d.nodeId).catch(() => {});
    let fetching = this.fetching.get(t.id);
    if (!fetching) {
      fetching = this.fetch(t, asked).finally(() => this.fetching.delete(t.id));
      this.fetching.set(t.id, fetching);
    }
    await fetching;
  }

  /** Fetches the template's files from the first node holding them that answers; nothing is left of a failed fetch. */
  private async fetch(t: TemplateRecord, asked: string): Promise<void> {
    const peers = this.peers;
    // One node (or a node outside a cluster's channel): the files are where the template was made.
    if (!peers)
      throw new ApiError(
        "node_unavailable",
        `Template '${asked}' has its files on the node that made it, not on this node; its sandboxes start there only`,
        1,
      );
    const holders = (await this.d.store.copies(t.id)).filter((id) => id !== peers.self);
    const from = peers.reachable(holders);
    if (from.length === 0) {
      throw new ApiError(
        "node_unavailable",
        `Template '${asked}' has its files on no node that is up now (${holders.length > 0 ? `held by ${holders.join(", ")}` : "no node holds them"})`,
        5,
      );
    }
    const errors: string[] = [];
    for (const peer of from) {
      const signal = AbortSignal.timeout(this.d.settings.fetchTimeoutS * 1000);
      try {
        if (t.rootfs && !this.d.rootfs.has(t.rootfs)) await this.fetchRootfs(t, t.rootfs, peer, peers, signal);
        if (t.home && !fs.existsSync(this.d.homes.pathOf(t.id))) await this.fetchHome(t, t.home, peer, peers, signal);
        await this.recordCopy(t.id);
        return;
      } catch (err) {
        if (!(err instanceof CopyError)) this.d.log({ err, template_id: t.id, node: peer.id }, "template fetch failed");
        errors.push(`${peer.id}: ${err instanceof CopyError ? err.message : "internal error"}`);
      }
    }
    throw new ApiError("node_unavailable", `Template '${asked}''s files could not be fetched (${errors.join("; ")}); retry shortly`, 5);
  }

  private async fetchRootfs(
    t: TemplateRecord,
    rootfs: string,
    peer: { id: string; url: string },
    peers: TemplatePeers,
    signal: AbortSignal,
  ) {
    const maxBytes = this.d.settings.maxRootfsMb * 2 ** 20;
    // Scratch beside the builds' (swept at start): renamed into place by adopt, removed otherwise.
    const staging = await fs.promises.mkdtemp(path.join(this.d.rootfs.workRoot, "fetch-"));
    try {
      const body = await requestCopy(peer, peers, t.id, "rootfs", signal);
      // Headers and padding: a tar of a tree is somewhat larger than the tree; adopt() holds the tree itself to the limit.
      await unpackTree(body, staging, maxBytes + maxBytes / 4 + 2 ** 24, signal);
      const want = await this.d.store.contentDigest(rootfs);
      if (want === undefined) throw new CopyError(`node ${peer.id} recorded no content digest for the root filesystem`);
      const got = await contentDigest(staging);
      if (got !== want) throw new CopyError(`the root filesystem from node ${peer.id} does not match its content digest`);
      await this.d.rootfs.adopt(staging, rootfs, this.treeLimits());
    } finally {
      await fs.promises.rm(staging, { recursive: true, force: true });
    }
  }

  private async fetchHome(t: TemplateRecord, sha256: string, peer: { id: string; url: string }, peers: TemplatePeers, signal: AbortSignal) {
    const final = this.d.homes.pathOf(t.id);
    const tmp = path.join(path.dirname(final), `.${t.id}.fetch-${crypto.randomBytes(4).toString("hex")}.tmp`);
    try {
      const body = await requestCopy(peer, peers, t.id, "home", signal);
      const got = await receiveFile(body, tmp, this.d.homes.maxBytes, signal);
      if (got !== sha256) throw new CopyError(`the saved files from node ${peer.id} do not match their SHA-256`);
      await fs.promises.rename(tmp, final);
    } finally {
      await fs.promises.rm(tmp, { force: true });
    }
  }

  /** Built-ins first, then the tenant's own ready templates. */
  async list(tenantId: string): Promise<Template[]> {
    return [...this.d.builtIns, ...(await this.d.store.readyTemplates(tenantId)).map(templateItem)];
  }

  /** A template of the tenant's (any state), or a built-in. */
  async get(tenantId: string, id: string) {
    const builtIn = this.d.builtIns.find((t) => t.id === id);
    if (builtIn) return { ...builtIn, status: "ready" };
    const t = await this.own(tenantId, id);
    const build = await this.d.store.lastBuild(t.id);
    return {
      ...templateItem(t),
      base_image: t.baseImage,
      environment: t.environment,
      workdir: t.workdir,
      tags: t.tags,
      status: t.state,
      build_id: build?.id ?? null,
      warm_sandboxes: this.d.poolSize(t.id),
    };
  }

  /** The tenant's template by id, or by name; undefined when it has no such template. */
  private async find(tenantId: string, idOrName: string): Promise<TemplateRecord | undefined> {
    const t = (await this.d.store.template(idOrName)) ?? (await this.d.store.templateByName(tenantId, idOrName));
    return t && t.tenantId === tenantId ? t : undefined;
  }

  private async own(tenantId: string, id: string): Promise<TemplateRecord> {
    const t = await this.find(tenantId, id);
    if (!t) throw notFound(id);
    return t;
  }

  /** What a sandbox of this template starts on (undefined: the tenant has no such ready template). */
  async resolve(tenantId: string, idOrName: string): Promise<CustomTemplate | undefined> {
    const t = await this.find(tenantId, idOrName);
    if (!t) return undefined;
    if (t.state !== "ready" || !(t.rootfs || t.home)) {
      throw new ApiError(
        "invalid_state",
        `Template '${idOrName}' is ${t.state === "building" ? "still building" : "not built (its build failed)"}`,
      );
    }
    // With a database shared by several nodes the record is everywhere, but the root filesystem and
    // the saved files are on the nodes that made or fetched them (docs/cluster.md): fetched here
    // first when this node lacks them, never started on nothing.
    await this.ensureFiles(t, idOrName);
    return {
      id: t.id,
      ...(t.rootfs
        ? {
            root: {
              dir: this.d.rootfs.pathOf(t.rootfs),
              ...(t.python ? { python: t.python } : {}),
              ...(t.workdir ? { workdir: t.workdir } : {}),
            },
          }
        : {}),
      ...(t.home ? { home: { file: this.d.homes.pathOf(t.id), sha256: t.home } } : {}),
      limits: { ...this.d.limits, cpus: t.vcpuCount, memoryMb: t.memoryMb, diskMb: t.diskMb },
      envVars: t.environment,
    };
  }

  async delete(tenantId: string, id: string): Promise<void> {
    if (this.d.builtIns.some((t) => t.id === id))
      throw new ApiError("invalid_request", `Template '${id}' is built in and cannot be deleted`);
    await this.changes.run(() => this.deleteOwn(tenantId, id));
  }

  private async deleteOwn(tenantId: string, id: string): Promise<void> {
    const t = await this.own(tenantId, id);
    if (t.state === "building") throw new ApiError("conflict", `Template '${id}' is building; delete it once its build has ended`);
    if (this.basesInUse.has(t.id))
      throw new ApiError("conflict", `Template '${id}' is the base of a build that is running; delete it once that build has ended`);
    const users = this.d.sandboxesOf(t.id);
    if (users > 0) throw new ApiError("conflict", `Template '${id}' is used by ${users} live sandbox(es); kill them first`);
    const build = await this.d.store.lastBuild(t.id);
    await this.d.store.deleteTemplate(t.id);
    await this.logs.dropTemplate(t.id, build ? [build.id] : []);
    this.held.delete(t.id);
    await this.d.dropPool(t.id);
    if (t.rootfs && (await this.d.store.rootfsUsers(t.rootfs)) === 0) await this.d.rootfs.remove(t.rootfs);
    await this.d.homes.remove(t.id);
  }

  async status(tenantId: string, buildId: string): Promise<BuildRecord> {
    const b = await this.d.store.build(buildId);
    if (!b || b.tenantId !== tenantId) throw buildNotFound(buildId);
    return b;
  }

  /** The tenant's latest builds (those of deleted templates go with them), newest first. */
  builds(tenantId: string, limit: number) {
    return this.d.store.recentBuilds(tenantId, limit);
  }

  /**
   * The node that runs (ran) a tenant's build when that is another one (its log is there, and in a
   * cluster its log requests are forwarded there); undefined when this node has it, or no such build.
   */
  async nodeOfBuild(tenantId: string, buildId: string): Promise<string | undefined> {
    if (this.active.has(buildId) || this.logs.has(buildId)) return undefined;
    const b = await this.d.store.build(buildId);
    if (!b || b.tenantId !== tenantId || b.nodeId === null || b.nodeId === this.d.nodeId) return undefined;
    return b.nodeId;
  }

  /**
   * The build's log (lines so far, and new ones as they come): from memory while it runs and for a
   * while after, then from this node's disk until its template is deleted.
   */
  async log(tenantId: string, buildId: string): Promise<BuildLog> {
    await this.status(tenantId, buildId);
    const log = await this.logs.get(buildId);
    if (!log) throw new ApiError("not_found", `The log of build '${buildId}' is not kept (its node lost it)`);
    return log;
  }

  /**
   * Cancels a build of the tenant's that waits or runs: a waiting one leaves the queue, a running
   * one has its tools killed and its sandbox released. Either ends `cancelled` (its template
   * `failed`, to be deleted or built again) with what it held given back; returns its status then.
   * 409 when it has ended already; 404 when it is not the tenant's.
   */
  async cancel(tenantId: string, buildId: string): Promise<BuildRecord> {
    const recorded = await this.status(tenantId, buildId);
    const a = this.active.get(buildId);
    if (a) {
      if (this.queue.remove(buildId)) {
        a.log.add("build cancelled before it started");
        await this.d.store.setState(a.template.id, "failed", new Date().toISOString());
        await this.finish(a.build, new BuildCancelled().message, "cancelled");
        a.release();
        await this.logs.ended(buildId);
      } else a.abort.abort(new BuildCancelled());
      await a.ended;
      return this.status(tenantId, buildId);
    }
    if (recorded.status === "completed" || recorded.status === "failed" || recorded.status === "cancelled") {
      throw new ApiError("conflict", `Build '${buildId}' has ended already (${recorded.status})`);
    }
    // Recorded as waiting or running, yet not on this node: the node that had it is gone (in a
    // cluster a cancel is forwarded to the build's node while it is up). Recorded as cancelled.
    await this.d.store.setState(recorded.templateId, "failed", new Date().toISOString());
    await this.finish(recorded, new BuildCancelled().message, "cancelled");
    return this.status(tenantId, buildId);
  }

  build(tenantId: string, input: BuildInput): Promise<{ template: TemplateRecord; build: BuildRecord }> {
    return this.changes.run(() => this.admit(tenantId, input));
  }

  private async admit(tenantId: string, input: BuildInput): Promise<{ template: TemplateRecord; build: BuildRecord }> {
    const network = buildPolicy(input.network);
    const plan = { ...(await this.plan(tenantId, input)), ...(network ? { network } : {}) };
    await this.checkRoomFor(tenantId, input.name);
    const refused = this.queue.refusal(tenantId);
    if (refused?.reason === "tenant") {
      throw new ApiError(
        "quota_exceeded",
        `Your tenant has ${refused.count} template builds waiting or running, the limit (AGENTBOX_TEMPLATE_BUILDS_PER_TENANT); wait for one to end or cancel one (DELETE /templates/builds/{build_id})`,
        30,
      );
    }
    if (refused) throw new ApiError("at_capacity", `${refused.count} template builds are waiting already; retry later`, 30);
    const limits = this.templateLimits(input);
    const now = new Date().toISOString();
    const template: TemplateRecord = {
      id: `tpl_${crypto.randomBytes(9).toString("base64url")}`,
      tenantId,
      name: input.name,
      description: input.description ?? "",
      ...limits,
      baseImage: input.dockerImage ?? imageOf(plan),
      environment: { ...plan.environment, ...input.environment },
      workdir: plan.workdir ?? null,
      tags: { ...plan.labels, ...input.tags },
      rootfs: null,
      python: null,
      // Files a base saved from a sandbox starts its sandboxes with: the new template's too.
      home: plan.base?.home ?? null,
      state: "building",
      createdAt: now,
      updatedAt: now,
    };
    const build: BuildRecord = {
      id: `bld_${crypto.randomBytes(9).toString("base64url")}`,
      templateId: template.id,
      tenantId,
      status: "pending",
      phase: "initializing",
      progress: 0,
      error: null,
      startedAt: null,
      completedAt: null,
      createdAt: now,
      nodeId: this.d.nodeId,
    };
    // Checked again by the insert itself: another node may have taken the name meanwhile.
    if (!(await this.d.store.insertTemplate(template))) throw nameTaken(input.name);
    await this.d.store.insertBuild(build);
    const log = this.logs.open(build.id, template.id);
    // Every template a stage builds on stays until the build ends.
    const baseIds = [plan, ...(plan.stages ?? [])].flatMap((st) => (st.base ? [st.base.id] : []));
    for (const id of baseIds) this.basesInUse.set(id, (this.basesInUse.get(id) ?? 0) + 1);
    let settle = () => {};
    const ended = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const active: ActiveBuild = {
      template,
      build,
      log,
      abort: new AbortController(),
      ended,
      release: () => {
        if (this.active.get(build.id) !== active) return;
        this.active.delete(build.id);
        for (const id of baseIds) {
          const left = (this.basesInUse.get(id) ?? 1) - 1;
          if (left > 0) this.basesInUse.set(id, left);
          else this.basesInUse.delete(id);
        }
        settle();
      },
    };
    this.active.set(build.id, active);
    this.queue.push({ id: build.id, tenantId, run: () => this.run(template, build, log, plan, active.abort).finally(active.release) });
    return { template, build };
  }

  /** Refuses a new template of this name: 409 when the name is taken, 429 past the tenant's count. */
  private async checkRoomFor(tenantId: string, name: string): Promise<void> {
    if (await this.d.store.templateByName(tenantId, name)) throw nameTaken(name);
    if ((await this.d.store.countTemplates(tenantId)) >= this.d.settings.maxPerTenant) {
      throw new ApiError(
        "quota_exceeded",
        `Your tenant has ${this.d.settings.maxPerTenant} templates, the limit (AGENTBOX_TEMPLATE_MAX_PER_TENANT); delete one first`,
        60,
      );
    }
  }

  /**
   * A running sandbox's files as a new template, ready at once: the root it runs in (its template's
   * root filesystem, shared, or the built-ins' system view) and what its /home/user holds now (an
   * archive made inside the sandbox, as a snapshot is, unpacked into each new sandbox before it is
   * handed out). Its limits, environment and workdir are its template's.
   */
  saveSandbox(tenantId: string, sandboxId: string, input: { name: string; description?: string }) {
    return this.changes.run(() => this.save(tenantId, sandboxId, input));
  }

  private async save(tenantId: string, sandboxId: string, input: { name: string; description?: string }) {
    await this.checkRoomFor(tenantId, input.name);
    const source = await this.d.sandbox(tenantId, sandboxId);
    const base = this.d.builtIns.some((t) => t.id === source.template) ? undefined : await this.own(tenantId, source.template);
    const id = `tpl_${crypto.randomBytes(9).toString("base64url")}`;
    const info = await this.d.homes.write(source.box, id);
    try {
      const now = new Date().toISOString();
      const { cpus, memoryMb, diskMb } = this.d.limits;
      const inserted = await this.d.store.insertTemplate({
        id,
        tenantId,
        name: input.name,
        description: input.description ?? `Saved from sandbox ${sandboxId}`,
        vcpuCount: base?.vcpuCount ?? cpus,
        memoryMb: base?.memoryMb ?? memoryMb,
        diskMb: base?.diskMb ?? diskMb,
        baseImage: base?.baseImage ?? null,
        environment: base?.environment ?? {},
        workdir: base?.workdir ?? null,
        tags: { ...base?.tags, saved_from_sandbox: sandboxId },
        rootfs: base?.rootfs ?? null,
        python: base?.python ?? null,
        home: info.sha256,
        state: "ready",
        createdAt: now,
        updatedAt: now,
      });
      // The insert checks the name again: another node may have taken it while the archive was made.
      if (!inserted) throw nameTaken(input.name);
    } catch (err) {
      await this.d.homes.remove(id);
      throw err;
    }
    await this.recordCopy(id).catch((err) => this.d.log({ err, template_id: id }, "template copy not recorded"));
    return this.get(tenantId, id);
  }

  /** What the build will do, checked before anything is recorded (a bad request is a 400 now, not a failed build). */
  private async plan(tenantId: string, input: BuildInput): Promise<Plan> {
    if (input.startCmd || input.readyCmd) {
      throw new ApiError("invalid_request", "start_cmd and ready_cmd are not supported: sandboxes start the service's own runtime");
    }
    if (input.dockerfile !== undefined) return this.planDockerfile(tenantId, input, input.dockerfile);
    if (input.context !== undefined)
      throw new ApiError("invalid_request", "context is the build context of a dockerfile: give the dockerfile");
    const steps = input.buildSteps ?? [];
    checkSteps(steps);
    if (input.dockerImage !== undefined) {
      if (input.baseTemplateId !== undefined) throw new ApiError("invalid_request", "Give docker_image or template_id, not both");
      const ref = parseImageRef(input.dockerImage);
      checkAllowed(ref, this.d.settings.registries);
      return { ref, steps, ...(input.registryAuth ? { auth: input.registryAuth } : {}) };
    }
    if (input.baseTemplateId === undefined) {
      throw new ApiError(
        "invalid_request",
        "Give docker_image (the image to build from) or template_id with build_steps (one of your templates to build on)",
      );
    }
    if (this.d.builtIns.some((t) => t.id === input.baseTemplateId)) {
      throw new ApiError(
        "invalid_request",
        "Build steps need a template of your own as their base (the built-ins have no root filesystem of their own): build one from docker_image first",
      );
    }
    const base = await this.own(tenantId, input.baseTemplateId);
    if (base.state !== "ready") throw new ApiError("invalid_state", `Template '${input.baseTemplateId}' is not built`);
    if (!base.rootfs) throw noRootfs(input.baseTemplateId);
    if (steps.length === 0) throw new ApiError("invalid_request", "template_id needs build_steps: the steps to run on it");
    return { base, steps };
  }

  /** A dockerfile's plan: its FROM is one of the tenant's templates (by id or name) or an allowed image. */
  private async planDockerfile(tenantId: string, input: BuildInput, dockerfile: string): Promise<Plan> {
    if (input.dockerImage !== undefined || input.baseTemplateId !== undefined || input.buildSteps !== undefined) {
      throw new ApiError(
        "invalid_request",
        "A dockerfile says its own base and steps: give it without docker_image, template_id or build_steps",
      );
    }
    const df = translateDockerfile(dockerfile, readContext(input.context ?? {}, this.d.settings.maxContextMb * 2 ** 20));
    const auth = input.registryAuth ? { auth: input.registryAuth } : {};
    /** A stage's base: an earlier stage, one of the tenant's templates (by id or name) or an allowed image. */
    const baseOf = async (stage: DockerfileStage): Promise<Omit<StagePlan, "steps">> => {
      checkSteps(stage.steps);
      if (stage.fromStage !== undefined) return { fromStage: stage.fromStage };
      const own = await this.find(tenantId, stage.from);
      if (own) {
        if (own.state !== "ready") throw new ApiError("invalid_state", `FROM ${stage.from}: the template is not built`);
        if (!own.rootfs) throw noRootfs(stage.from);
        return { base: own };
      }
      if (this.d.builtIns.some((t) => t.id === stage.from || t.name === stage.from)) {
        throw new ApiError(
          "invalid_request",
          `FROM ${stage.from}: the built-in templates have no root filesystem to build on; use an image`,
        );
      }
      const ref = parseImageRef(stage.from);
      checkAllowed(ref, this.d.settings.registries);
      return { ref, ...auth };
    };
    const last = await baseOf(df);
    const stages: StagePlan[] = [];
    for (const st of df.stages) stages.push({ ...(await baseOf(st)), steps: st.steps });
    return {
      ...last,
      steps: df.steps,
      stages,
      environment: { ...last.base?.environment, ...df.environment },
      workdir: df.workdir ?? last.base?.workdir ?? null,
      labels: df.labels,
    };
  }

  /** Host commands of a build's steps, in its memory group; the limit is the layer's size plus the tools' headroom. */
  private hostWork(group: BuildCgroup) {
    const headroomMb = this.d.settings.buildMemoryHeadroomMb;
    return {
      run: (file: string, args: string[], signal: AbortSignal) => group.run(file, args, signal),
      limitMb: (mb: number) => group.limitMb(mb + headroomMb).catch(() => {}),
    };
  }

  /** What a template's root filesystem may take on disk: bytes and files. */
  private treeLimits(): TreeLimits {
    return { maxBytes: this.d.settings.maxRootfsMb * 2 ** 20, maxFiles: this.d.settings.maxFiles };
  }

  private templateLimits(input: BuildInput): Pick<TemplateRecord, "vcpuCount" | "memoryMb" | "diskMb"> {
    const { cpus, memoryMb, diskMb } = this.d.limits;
    const check = (name: string, value: number | undefined, max: number, setting: string) => {
      if (value !== undefined && value > max) {
        throw new ApiError("invalid_request", `${name} ${value} is over this service's limit of ${max} per sandbox (${setting})`);
      }
      return value ?? max;
    };
    return {
      vcpuCount: check("vcpu_count", input.vcpuCount, cpus, "AGENTBOX_SANDBOX_CPUS"),
      memoryMb: check("memory_mb", input.memoryMb, memoryMb, "AGENTBOX_SANDBOX_MEMORY_MB"),
      diskMb: check("disk_mb", input.diskMb, diskMb, "AGENTBOX_SANDBOX_DISK_MB"),
    };
  }

  private update(b: BuildRecord, change: Partial<BuildRecord>): Promise<void> {
    Object.assign(b, change);
    const row = { ...b };
    const written = (this.writes.get(b.id) ?? Promise.resolve()).then(() => this.d.store.updateBuild(row));
    const settled = written.catch(() => {});
    this.writes.set(b.id, settled);
    void settled.then(() => {
      if (this.writes.get(b.id) === settled) this.writes.delete(b.id);
    });
    return written;
  }

  /** A progress report: written in its turn, not waited for. */
  private report(b: BuildRecord, change: Partial<BuildRecord>): void {
    this.update(b, change).catch((err) => this.d.log({ err, build_id: b.id }, "template build progress not recorded"));
  }

  private finish(b: BuildRecord, error: string | null, status?: "cancelled"): Promise<void> {
    return this.update(b, {
      status: status ?? (error ? "failed" : "completed"),
      phase: error ? b.phase : "completed",
      progress: error ? b.progress : 100,
      error,
      completedAt: new Date().toISOString(),
    });
  }

  /**
   * One stage's root filesystem: its base (pulled, one of the tenant's templates, or an earlier
   * stage's), then its steps run on a copy of it. `last`: the template's own stage (its progress
   * is the build's); an earlier one's root is transient.
   */
  private async buildStage(stage: StagePlan, done: Built[], c: StageContext, index: number, last: boolean): Promise<Built> {
    const s = this.d.settings;
    let digest: string;
    let python: string | null;
    if (stage.ref) {
      const ref = stage.ref;
      const work = path.join(c.work, `stage-${index}`);
      await fs.promises.mkdir(work, { mode: 0o700 });
      await fs.promises.chown(work, s.buildUid, s.buildUid).catch(() => {});
      const pulled = await pullImage({
        ref,
        ...(stage.auth ? { auth: stage.auth } : {}),
        insecure: s.insecureRegistries.includes(ref.registry),
        work,
        uid: s.buildUid,
        maxImageBytes: s.maxImageMb * 2 ** 20,
        maxFileBytes: s.maxRootfsMb * 2 ** 20,
        maxFiles: s.maxFiles,
        ...(c.group ? { cgroup: c.group } : {}),
        signal: c.deadline,
        log: (line) => c.log.add(line),
        progress: (p) => {
          if (last) this.report(c.b, { phase: p >= 50 ? "building" : "preparing", progress: p });
        },
      });
      c.log.add(`checking and storing the root filesystem sha256:${pulled.digest}`);
      python = await this.d.rootfs.adopt(pulled.tree, pulled.digest, this.treeLimits());
      digest = pulled.digest;
      c.transient.push(digest);
    } else if (stage.fromStage !== undefined) {
      ({ digest, python } = done[stage.fromStage] as Built);
    } else {
      const base = stage.base as TemplateRecord;
      digest = base.rootfs as string;
      python = base.python;
    }
    if (stage.steps.length === 0) return { digest, python };
    if (last) await this.update(c.b, { phase: "building", progress: 50 });
    const tree = await runSteps({
      base: { dir: this.d.rootfs.pathOf(digest), python },
      steps: stage.steps,
      stages: done.map((d) => this.d.rootfs.pathOf(d.digest)),
      layerDir: this.d.rootfs.layerDir(c.b.id),
      out: path.join(c.work, `steps-rootfs-${index}`),
      limits: { ...this.d.limits, cpus: c.t.vcpuCount, memoryMb: c.t.memoryMb },
      diskMb: c.t.diskMb,
      maxFiles: s.maxFiles,
      ...(c.group ? { host: this.hostWork(c.group) } : {}),
      deadline: c.deadline,
      deadlineAt: c.deadlineAt,
      startBox: (prepare) => this.buildBox(prepare, c),
      log: (line) => c.log.add(line),
      progress: (p) => {
        if (last) this.report(c.b, { progress: p });
      },
    });
    if (last) await this.update(c.b, { phase: "finalizing", progress: 85 });
    // Named by what made it: the base, the steps and this build (steps that fetch are not reproducible).
    const made = crypto
      .createHash("sha256")
      .update(JSON.stringify([digest, stage.steps, c.b.id, index]))
      .digest("hex");
    c.log.add(`checking and storing the new root filesystem sha256:${made}`);
    const madePython = await this.d.rootfs.adopt(tree, made, this.treeLimits());
    if (!last) c.transient.push(made);
    return { digest: made, python: madePython };
  }

  /**
   * The image's own python compiles what the runtime imports, once, so that its sandboxes do not at
   * every start (./bytecode.ts). A failure only costs that speed: the build goes on.
   */
  private async warmBytecode(digest: string, python: string, c: StageContext): Promise<void> {
    const root = this.d.rootfs.pathOf(digest);
    try {
      const { box, release } = this.killedOnAbort(
        await this.d.buildBox(async () => ({
          id: "build",
          root: { dir: root, python },
          limits: { ...this.d.limits, cpus: c.t.vcpuCount, memoryMb: c.t.memoryMb },
          envVars: {},
        })),
        c.deadline,
      );
      try {
        const timeoutMs = Math.max(1000, Math.min(60_000, c.deadlineAt - Date.now()));
        const n = await warmBytecode({ box, python, root, timeoutMs });
        c.log.add(`bytecode: ${n} module(s) of ${python} compiled once for its sandboxes' starts`);
      } finally {
        await release();
      }
    } catch (err) {
      c.log.add(`bytecode: not made (${String((err as Error)?.message ?? err).slice(0, 200)}); sandboxes compile at start`);
    }
  }

  /**
   * A build sandbox released (its processes killed) as soon as the build is cancelled, so a step
   * running in it ends then; released once, whoever asks first. At the build's deadline a step's
   * own timeout (the time left) ends it and names the deadline.
   */
  private killedOnAbort(started: { box: Box; release(): Promise<void> }, signal: AbortSignal) {
    let released: Promise<void> | undefined;
    const release = () => {
      signal.removeEventListener("abort", onAbort);
      released ??= started.release();
      return released;
    };
    const onAbort = () => {
      if (signal.reason instanceof BuildCancelled) void release().catch(() => {});
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    return { box: started.box, release };
  }

  /** The sandbox a stage's steps run in: with the build's egress when its request gave `network`. */
  private async buildBox(prepare: (uid: number) => Promise<CustomTemplate>, c: StageContext) {
    const started = this.killedOnAbort(await this.d.buildBox(prepare), c.deadline);
    const policy = c.network;
    if (!policy) return started;
    let detach: () => void;
    try {
      if (!this.net) throw new ToolError("this service has no network area to give the build its network");
      detach = await this.net.attach(c.t.tenantId, started.box, policy, (e) => {
        const target = `${e.host}:${e.port}`;
        if (e.allowed) c.log.add(`network: ${target} allowed (${e.reason})`);
        else {
          c.log.add(`network: ${target} refused: ${e.reason}`);
          c.refused.push(`${target} (${e.reason})`);
        }
      });
    } catch (err) {
      await started.release();
      throw err;
    }
    c.log.add(`network: the steps reach ${policy.allowOut.join(", ")} through the egress proxy, nothing else`);
    return {
      box: started.box,
      release: async () => {
        try {
          await started.release();
        } finally {
          detach();
        }
      },
    };
  }

  /**
   * The build's memory group for its host-side work (./build-cgroup.ts), limited to the largest
   * layer it may make plus headroom until its steps know their base's size; none (said in its log)
   * where the host does not let the service make one.
   */
  private async buildGroup(t: TemplateRecord, b: BuildRecord, log: BuildLog): Promise<BuildCgroup | undefined> {
    const s = this.d.settings;
    try {
      return await BuildCgroup.create(s.dir, b.id, (s.maxRootfsMb + t.diskMb + s.buildMemoryHeadroomMb) * 2 ** 20);
    } catch (err) {
      log.add(
        `no memory cgroup of the build's own (${String((err as Error)?.message ?? err).slice(0, 200)}): its host-side work runs in the service's`,
      );
      return undefined;
    }
  }

  /** Runs the build; `deadline` is aborted at its deadline or by a cancel (its reason says which). */
  private async run(t: TemplateRecord, b: BuildRecord, log: BuildLog, plan: Plan, deadline: AbortController): Promise<void> {
    const s = this.d.settings;
    const startedAt = Date.now();
    const timer = setTimeout(
      () => deadline.abort(new ToolError(`the build took longer than ${s.buildTimeoutS} s (AGENTBOX_TEMPLATE_BUILD_TIMEOUT_S)`)),
      s.buildTimeoutS * 1000,
    );
    log.add(`build ${b.id} of template ${t.id} (${t.name}) started`);
    /** Root filesystems this build made or pulled only as a base or an earlier stage: removed at its end unless a template uses them. */
    const transient: string[] = [];
    const refused: string[] = [];
    let group: BuildCgroup | undefined;
    try {
      // Cancelled between leaving the queue and starting.
      if (deadline.signal.aborted) throw deadline.signal.reason;
      await this.update(b, { status: "running", phase: "preparing", progress: 5, startedAt: new Date().toISOString() });
      const work = await this.d.rootfs.workDir(b.id, s.buildUid);
      group = await this.buildGroup(t, b, log);
      // The tenant's templates this build stands on, here (fetched from another node if need be).
      for (const st of [plan, ...(plan.stages ?? [])]) if (st.base) await this.ensureFiles(st.base, st.base.name);
      if (plan.base?.home) await this.d.homes.link(plan.base.id, t.id);
      const ctx: StageContext = {
        t,
        b,
        log,
        work,
        deadline: deadline.signal,
        deadlineAt: startedAt + s.buildTimeoutS * 1000,
        transient,
        refused,
        ...(plan.network ? { network: plan.network } : {}),
        ...(group ? { group } : {}),
      };
      // A multi-stage Dockerfile's earlier stages first, each on its own base; their roots are
      // what later stages build on or copy from.
      const done: Built[] = [];
      for (const [i, stage] of (plan.stages ?? []).entries()) {
        log.add(`stage ${i + 1} of ${(plan.stages?.length ?? 0) + 1}`);
        done.push(await this.buildStage(stage, done, ctx, i, false));
      }
      const { digest, python } = await this.buildStage(plan, done, ctx, done.length, true);
      await this.update(b, { phase: "finalizing", progress: 90 });
      if (python) await this.warmBytecode(digest, python, ctx);
      if (deadline.signal.aborted) throw deadline.signal.reason;
      log.add(
        python
          ? `the image's own ${python} runs code/run python`
          : "the image has no usable python3: the service's own runs code/run python",
      );
      await this.d.store.setBuilt(t.id, digest, python, new Date().toISOString());
      await this.recordCopy(t.id);
      await this.finish(b, null);
      log.add("build completed");
    } catch (caught) {
      // A tool or step that failed because the build was cancelled: the cancel is why.
      const cancelled = deadline.signal.reason instanceof BuildCancelled;
      const err: unknown = cancelled ? deadline.signal.reason : caught;
      let message =
        err instanceof ApiError || err instanceof ToolError || cancelled
          ? (err as Error).message
          : `internal error: ${String((err as Error)?.message ?? err)}`;
      // A step that failed after its network refused it something: that is most likely why.
      if (refused.length > 0) {
        const more = refused.length > 3 ? ` and ${refused.length - 3} more` : "";
        message += ` (the build's network refused ${refused.slice(0, 3).join(", ")}${more}: see its allow_out)`;
      }
      if (!(err instanceof ApiError || err instanceof ToolError || cancelled)) this.d.log({ err, build_id: b.id }, "template build failed");
      log.add(cancelled ? "build cancelled" : `build failed: ${message}`);
      await this.d.store.setState(t.id, "failed", new Date().toISOString());
      await this.finish(b, message, cancelled ? "cancelled" : undefined);
    } finally {
      clearTimeout(timer);
      // A pulled image or a stage that only served as a base (or whose build failed) is not kept.
      for (const digest of transient) {
        if ((await this.d.store.rootfsUsers(digest).catch(() => 1)) === 0) await this.d.rootfs.remove(digest).catch(() => {});
      }
      await this.d.rootfs.removeWork(b.id).catch(() => {});
      if (group) {
        const peak = await group.peakBytes();
        log.add(`the build's host-side work peaked at ${Math.ceil(peak / 2 ** 20)} MiB in its own memory cgroup`);
        await group.destroy().catch((err) => this.d.log({ err, build_id: b.id }, "template build cgroup not removed"));
      }
      await this.logs.ended(b.id);
    }
  }
}
