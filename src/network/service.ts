// The network of each sandbox, host side: its egress policy (checked by the egress proxy on every
// connection), the egress log and byte counts, the proxy settings in its environment, and
// connections to its ports. A sandbox nobody asked any of this for has no state here at all.
import fs from "node:fs";
import type net from "node:net";
import path from "node:path";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import { ApiError, invalid } from "../errors.js";
import type { Box } from "../sandbox/box.js";
import { netDirOf } from "../sandbox/bwrap.js";
import type { SandboxManager } from "../sandbox/manager.js";
import { ConnectionBudget, type Slot } from "./budget.js";
import { type EgressLogEntry, type EgressProxy, egressServer } from "./egress.js";
import { hostRanges } from "./host-ranges.js";
import { egressEnabled, type NetworkPolicy, PolicyError, type PolicyInput, PolicyMatcher, parsePolicy } from "./policy.js";
import { type NetworkSettings, networkSettings } from "./settings.js";
import { PortBroker, PortUnavailable } from "./ports.js";
import { Resolver } from "./resolver.js";
import { ShareTokens, shareKey } from "./share.js";
import type { NetworkStore } from "./store.js";

/** The create body's network fields. */
export interface CreateNetworkInput {
  internet_access?: boolean;
  network?: { allow_out?: string[]; deny_out?: string[] };
}

interface SandboxNet {
  id: string;
  tenantId: string;
  dir: string;
  policy: NetworkPolicy;
  matcher: PolicyMatcher;
  egress?: EgressProxy;
  ports?: PortBroker;
  log: EgressLogEntry[];
  rx: number;
  tx: number;
  relayRestartedAt: number;
  /**
   * A template build's sandbox (attachBuild): its box, which the sandbox registry does not know;
   * its policy is not stored (a build does not outlive the service) and each connection is also
   * told to `onEntry` (the build's log).
   */
  build?: { box: Box; onEntry(entry: EgressLogEntry): void };
}

const RELAY_WAIT_MS = 5000;
const RELAY_RESTART_GAP_MS = 5000;
/** How often connections refused by the caps are logged at most: a flood must not become a flood of log lines. */
const REFUSED_LOG_EVERY_MS = 10_000;

function listen(server: net.Server, file: string): Promise<void> {
  fs.rmSync(file, { force: true });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(file, () => {
      server.off("error", reject);
      // The sandbox's uid must be able to connect; the directory is read-only to it.
      fs.chmodSync(file, 0o666);
      resolve();
    });
  });
}

export class NetworkService {
  private readonly nets = new Map<string, SandboxNet>();
  private readonly resolver: Resolver;
  /** This host's addresses, subnets and gateways: refused like loopback (the service's own ports among them). */
  private readonly hostRanges = hostRanges();
  private readonly tokens: ShareTokens;
  private readonly budget: ConnectionBudget;
  private refusedSinceLog = 0;
  private lastRefusedLog = 0;

  constructor(
    private readonly config: Config,
    private readonly sandboxes: SandboxManager,
    private readonly store: NetworkStore,
    private readonly log: Logger,
    /** The operator's network settings (src/network/settings.ts). */
    readonly settings: NetworkSettings = networkSettings(),
  ) {
    this.resolver = new Resolver(settings.hosts);
    this.tokens = new ShareTokens(shareKey(config.dataDir, settings.shareSecret));
    this.budget = new ConnectionBudget(settings.connections);
    sandboxes.onEnded((id) => this.drop(id));
  }

  /**
   * Gives re-adopted sandboxes their policy back and removes the stored policies of sandboxes that
   * ended; removes socket directories no sandbox owns. With a database shared by several nodes,
   * another node's running sandbox keeps its policy: that node needs it when it restarts.
   */
  async init(): Promise<void> {
    for (const row of await this.store.all()) {
      try {
        await this.sandboxes.box(row.tenantId, row.sandboxId);
        await this.apply(row.tenantId, row.sandboxId, row.policy);
      } catch (err) {
        if (await this.runsElsewhere(row.tenantId, row.sandboxId)) continue;
        if (!(err instanceof ApiError)) this.log.warn({ err, sandbox_id: row.sandboxId }, "network: policy not restored");
        await this.store.remove(row.sandboxId);
      }
    }
    const root = `${this.config.workspaceDir}.net`;
    for (const name of fs.existsSync(root) ? fs.readdirSync(root) : []) {
      if (!fs.existsSync(path.join(this.config.workspaceDir, name))) fs.rmSync(path.join(root, name), { recursive: true, force: true });
    }
  }

  /** A sandbox whose record says it runs on another node: that node keeps its policy. */
  private async runsElsewhere(tenantId: string, id: string): Promise<boolean> {
    const record = await this.sandboxes.get(tenantId, id).catch(() => undefined);
    return record?.status === "running" && record.nodeId !== this.config.nodeId;
  }

  private parse(input: PolicyInput, base?: NetworkPolicy): NetworkPolicy {
    try {
      return parsePolicy(input, base);
    } catch (err) {
      if (err instanceof PolicyError) throw invalid(err.message);
      throw err;
    }
  }

  /** The policy a create asks for (validated before the sandbox exists); undefined when there is nothing to set up. */
  forCreate(body: CreateNetworkInput): NetworkPolicy | undefined {
    const net = body.network ?? {};
    const said = body.internet_access !== undefined || net.allow_out !== undefined || net.deny_out !== undefined;
    const policy = said
      ? this.parse({ internet_access: body.internet_access, ...net }, { ...this.settings.defaultPolicy, allowOut: [], denyOut: [] })
      : this.settings.defaultPolicy;
    return egressEnabled(policy) || said ? policy : undefined;
  }

  /** After a create: the sandbox gets its policy (and proxy, when egress is on); a failure ends it. */
  async attach(tenantId: string, sandboxId: string, policy: NetworkPolicy): Promise<void> {
    try {
      await this.apply(tenantId, sandboxId, policy);
    } catch (err) {
      const message = `its network policy could not be applied: ${String((err as Error)?.message ?? err).slice(0, 300)}`;
      await this.sandboxes.end(sandboxId, { reason: "error", detail: { message } }).catch(() => {});
      throw err;
    }
  }

  /**
   * A template build's sandbox gets egress under `policy` as any sandbox does: its own proxy and
   * relay, the caps on connections (counted for the build's tenant), the operator's deny list and
   * the never-reachable ranges. Returns what ends it (after the box is released).
   */
  async attachBuild(tenantId: string, box: Box, policy: NetworkPolicy, onEntry: (entry: EgressLogEntry) => void): Promise<() => void> {
    const id = box.spec.name;
    this.nets.set(id, {
      id,
      tenantId,
      dir: netDirOf(box.workspace),
      policy,
      matcher: this.matcher(policy),
      log: [],
      rx: 0,
      tx: 0,
      relayRestartedAt: 0,
      build: { box, onEntry },
    });
    try {
      await this.apply(tenantId, id, policy);
    } catch (err) {
      this.drop(id);
      throw err;
    }
    return () => this.drop(id);
  }

  /** The caller's sandbox is running (404 for another tenant's, 400 for an ended one). */
  async checkRunning(tenantId: string, sandboxId: string): Promise<void> {
    await this.sandboxes.box(tenantId, sandboxId);
  }

  /** The caller's sandbox's policy (404 for another tenant's; an ended one's is the default). */
  async getPolicy(tenantId: string, sandboxId: string): Promise<NetworkPolicy> {
    await this.sandboxes.get(tenantId, sandboxId);
    return this.policyOf(sandboxId);
  }

  /** A live sandbox's policy, as snapshots capture it. */
  policyOf(sandboxId: string): NetworkPolicy {
    return this.nets.get(sandboxId)?.policy ?? this.settings.defaultPolicy;
  }

  /** Changes a running sandbox's policy; the next connection is checked against the new one. */
  async setPolicy(tenantId: string, sandboxId: string, input: PolicyInput): Promise<NetworkPolicy> {
    await this.sandboxes.box(tenantId, sandboxId);
    const policy = this.parse(input, this.policyOf(sandboxId));
    await this.apply(tenantId, sandboxId, policy);
    return policy;
  }

  async egressLog(tenantId: string, sandboxId: string, limit: number): Promise<EgressLogEntry[]> {
    await this.sandboxes.get(tenantId, sandboxId);
    return (this.nets.get(sandboxId)?.log ?? []).slice(-limit);
  }

  /** Bytes the sandbox moved through the egress proxy (for its metrics). */
  bytes(sandboxId: string): { rx: number; tx: number } {
    const n = this.nets.get(sandboxId);
    return { rx: n?.rx ?? 0, tx: n?.tx ?? 0 };
  }

  /** A connection to 127.0.0.1:`port` inside the caller's running sandbox; 502 when nothing listens. */
  async openPort(tenantId: string, sandboxId: string, port: number): Promise<net.Socket> {
    await this.sandboxes.box(tenantId, sandboxId);
    const n = await this.state(tenantId, sandboxId);
    try {
      await this.relay(n);
      return await (n.ports as PortBroker).open(port);
    } catch (err) {
      if (err instanceof PortUnavailable) {
        throw new ApiError("upstream_error", `Nothing answered on port ${port} in sandbox '${sandboxId}': ${err.message}`);
      }
      throw err;
    }
  }

  /**
   * A share link's token for one port of the caller's running sandbox, valid `expiresInS` seconds
   * and only while the API key `keyId` that asks for it is (the caller checks that on use).
   */
  async share(
    tenantId: string,
    keyId: string,
    sandboxId: string,
    port: number,
    expiresInS: number,
  ): Promise<{ token: string; expiresAt: Date }> {
    await this.sandboxes.box(tenantId, sandboxId);
    const max = this.settings.shareMaxS;
    if (expiresInS > max) throw invalid(`'expires_in' must be at most ${max} seconds`);
    const expiresAt = Math.floor(Date.now() / 1000) + expiresInS;
    return { token: this.tokens.make({ tenantId, keyId, sandboxId, port, expiresAt }), expiresAt: new Date(expiresAt * 1000) };
  }

  /** The tenant and key a share token speaks for, if it is valid now for exactly this sandbox and port. */
  shareClaim(token: string, sandboxId: string, port: number): { tenantId: string; keyId: string } | undefined {
    return this.tokens.verify(token, sandboxId, port);
  }

  private async state(tenantId: string, sandboxId: string, policy?: NetworkPolicy): Promise<SandboxNet> {
    const known = this.nets.get(sandboxId);
    if (known) return known;
    const box = await this.sandboxes.box(tenantId, sandboxId);
    // Looked up again: another call may have made it meanwhile.
    let n = this.nets.get(sandboxId);
    if (!n) {
      const p = policy ?? this.settings.defaultPolicy;
      n = {
        id: sandboxId,
        tenantId,
        dir: netDirOf(box.workspace),
        policy: p,
        matcher: this.matcher(p),
        log: [],
        rx: 0,
        tx: 0,
        relayRestartedAt: 0,
      };
      this.nets.set(sandboxId, n);
    }
    return n;
  }

  private matcher(p: NetworkPolicy): PolicyMatcher {
    const s = this.settings;
    return new PolicyMatcher(p, s.denyOut, s.allowPrivate, this.hostRanges);
  }

  private proxyEnv(on: boolean): Record<string, string> {
    if (!on) return {};
    const url = `http://127.0.0.1:${this.settings.relayPort}`;
    const noProxy = "localhost,127.0.0.1,::1";
    return {
      HTTP_PROXY: url,
      HTTPS_PROXY: url,
      http_proxy: url,
      https_proxy: url,
      NO_PROXY: noProxy,
      no_proxy: noProxy,
      PIP_PROXY: url,
      npm_config_proxy: url,
      npm_config_https_proxy: url,
    };
  }

  private async apply(tenantId: string, sandboxId: string, policy: NetworkPolicy): Promise<void> {
    const n = await this.state(tenantId, sandboxId, policy);
    n.policy = policy;
    n.matcher = this.matcher(policy);
    if (!n.build) await this.store.save(sandboxId, tenantId, policy);
    const on = egressEnabled(policy);
    // A sandbox started again under the same id (resumed from a snapshot) has a fresh socket directory.
    if (n.egress && !fs.existsSync(path.join(n.dir, "egress.sock"))) {
      n.egress.close();
      n.egress = undefined;
    }
    if (on && !n.egress) {
      n.egress = egressServer({
        resolve: (host) => this.resolver.resolve(host),
        decideByName: (host) => n.matcher.decideByName(host, this.resolver.mapped(host)),
        decide: (host, addresses, trusted) => n.matcher.decide(host, addresses, trusted),
        record: (entry) => {
          n.build?.onEntry(entry);
          n.log.push(entry);
          if (n.log.length > this.settings.logEntries) n.log.shift();
        },
        count: (out, inn) => {
          n.tx += out;
          n.rx += inn;
        },
        admit: () => this.admit(n),
      });
      await listen(n.egress.server, path.join(n.dir, "egress.sock"));
    } else if (!on && n.egress) {
      // No new connections; those open now finish (a policy change applies to the next connection).
      n.egress.server.close();
      n.egress = undefined;
      fs.rmSync(path.join(n.dir, "egress.sock"), { force: true });
    }
    // The proxy settings go into the environment every later process starts with (a sandbox that
    // never had egress or ports has no relay to tell).
    if (on || n.ports) await this.relay(n, this.proxyEnv(on));
  }

  /** Starts the sandbox's relay unless it is connected; `env` (when given) replaces the proxy settings. */
  private async relay(n: SandboxNet, env?: Record<string, string>): Promise<void> {
    if (n.ports && !fs.existsSync(path.join(n.dir, "ports.sock"))) {
      n.ports.close();
      n.ports = undefined;
    }
    if (!n.ports) {
      n.ports = new PortBroker(
        () => this.relayLost(n),
        () => this.admit(n),
      );
      await listen(n.ports.server, path.join(n.dir, "ports.sock"));
    }
    if (n.ports.connected && env === undefined) return;
    const box = n.build?.box ?? (await this.sandboxes.box(n.tenantId, n.id));
    const reply = await box.request({ op: "net", egress_port: this.settings.relayPort, env: env ?? null });
    if (reply.ev !== "ok")
      throw new ApiError(
        "internal_error",
        `The sandbox's network relay did not start (${reply.ev === "error" ? reply.message : reply.ev})`,
      );
    if (!(await n.ports.waitForControl(RELAY_WAIT_MS))) throw new ApiError("internal_error", "The sandbox's network relay did not connect");
  }

  /**
   * The relay's control connection ended: the sandbox's processes were restarted (its kernels
   * crashed, or a run overran its backstop) or its code killed the relay. With egress on, the new
   * supervisor gets the proxy settings and a relay again (at most every few seconds).
   */
  private relayLost(n: SandboxNet): void {
    if (this.nets.get(n.id) !== n || !egressEnabled(n.policy)) return;
    const now = Date.now();
    if (now - n.relayRestartedAt < RELAY_RESTART_GAP_MS) return;
    n.relayRestartedAt = now;
    setTimeout(() => {
      if (this.nets.get(n.id) !== n) return;
      this.relay(n, this.proxyEnv(egressEnabled(n.policy))).catch((err) =>
        this.log.warn({ err, sandbox_id: n.id }, "network: relay not restarted"),
      );
    }, 200).unref();
  }

  /** A connection slot for the sandbox under the caps, or the refusal its connection is closed with. */
  private admit(n: SandboxNet): Slot | string {
    const slot = this.budget.take(n.tenantId, n.id);
    if ("release" in slot) return slot;
    this.refusedSinceLog += 1;
    const now = Date.now();
    if (now - this.lastRefusedLog >= REFUSED_LOG_EVERY_MS) {
      this.log.warn(
        { sandbox_id: n.id, tenant_id: n.tenantId, cap: slot.refused, limit: slot.limit, refused: this.refusedSinceLog },
        "network: sandbox connections refused at the cap",
      );
      this.lastRefusedLog = now;
      this.refusedSinceLog = 0;
    }
    const whose = slot.refused === "sandbox" ? "this sandbox" : slot.refused === "tenant" ? "this tenant's sandboxes" : "all sandboxes";
    return `more than ${slot.limit} connections open at once for ${whose}`;
  }

  private drop(id: string): void {
    const n = this.nets.get(id);
    if (!n) return;
    this.nets.delete(id);
    n.egress?.close();
    n.ports?.close();
    if (!n.build) this.store.remove(id).catch((err) => this.log.warn({ err, sandbox_id: id }, "network: stored policy not removed"));
    fs.rmSync(n.dir, { recursive: true, force: true });
  }
}
