// The cluster's pure rules: placement by load, the lease and fencing rules, routes as stored in
// Redis and how long one looked up is reused, which sandbox or deployment a request is for, the internal channel's signatures, and which
// node owns a vector index.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Redis } from "ioredis";
import { ChannelAuth, sign, verify } from "../../src/cluster/channel-auth.js";
import { deploymentTargetOf } from "../../src/cluster/deployments.js";
import { buildTargetOf } from "../../src/cluster/template-builds.js";
import { formatRoute, isLost, mayServe, parseRoute, routeTarget } from "../../src/cluster/lease.js";
import { choose, chooseWithGpus, preferHolders } from "../../src/cluster/placement.js";
import { RoutingMap } from "../../src/cluster/routing.js";
import { mayTarget, targetOf } from "../../src/cluster/targets.js";
import { rendezvousOwner, servesVectors } from "../../src/cluster/vector-owners.js";

const node = (id: string, freeMemoryMb: number, liveSandboxes: number) => ({ id, freeMemoryMb, liveSandboxes });

test("placement: the best of the sampled nodes by free memory per live sandbox", () => {
  const nodes = [node("a", 8000, 3), node("b", 8000, 0), node("c", 2000, 0)];
  // Sampling all: b has 8000 MiB for its first sandbox.
  assert.equal(choose(nodes, 3)?.id, "b");
  // Same memory and sandboxes: the id breaks the tie (a stable choice).
  assert.equal(choose([node("y", 1000, 1), node("x", 1000, 1)], 2)?.id, "x");
  // Equal score: fewer live sandboxes win.
  assert.equal(choose([node("p", 2000, 1), node("q", 1000, 0)], 2)?.id, "q");
  // Sampling one: whichever the random source draws.
  assert.equal(choose(nodes, 1, () => 0)?.id, "a");
  assert.equal(choose(nodes, 1, () => 0.99)?.id, "c");
  // A sample larger than the nodes takes them all; no nodes, no choice.
  assert.equal(choose(nodes, 10, () => 0.5)?.id, "b");
  assert.equal(choose([], 3), undefined);
});

test("placement: sampling two of many spreads creates and avoids the loaded node", () => {
  const nodes = [node("full", 100, 50), ...Array.from({ length: 9 }, (_, i) => node(`n${i}`, 8000, i))];
  let seed = 1;
  const random = () => {
    seed = (seed * 48271) % 2147483647;
    return seed / 2147483647;
  };
  const picks = new Map<string, number>();
  for (let i = 0; i < 1000; i++) {
    const id = choose(nodes, 2, random)?.id as string;
    picks.set(id, (picks.get(id) ?? 0) + 1);
  }
  assert.equal(picks.get("full"), undefined, "the loaded node loses every pair it is drawn in");
  assert.ok((picks.get("n0") ?? 0) > (picks.get("n8") ?? 0));
});

test("placement: a template's creates go to the executors holding its files, any executor when none does", () => {
  const nodes = [node("a", 8000, 0), node("b", 1000, 5), node("c", 1000, 3)];
  // Held by b and c: the best of those, though a has the most room.
  assert.equal(choose(preferHolders(nodes, ["b", "c", "api"]), 3)?.id, "c");
  assert.deepEqual(
    preferHolders(nodes, ["b"]).map((n) => n.id),
    ["b"],
  );
  // Held by no executor that is up (a node lost, or the API node that built it): any executor.
  assert.equal(preferHolders(nodes, ["gone"]), nodes);
  assert.equal(preferHolders(nodes, []), nodes);
  // A built-in (no holders to prefer): by load alone.
  assert.equal(preferHolders(nodes, undefined), nodes);
});

test("placement: a deployment asking for GPUs goes to an executor with that many free, else why not", () => {
  const node = (id: string, freeMemoryMb: number, gpus: { model: string; count: number; free: number }[]) => ({
    id,
    freeMemoryMb,
    liveSandboxes: 0,
    gpus,
  });
  const t4 = (count: number, free: number) => [{ model: "Tesla T4", count, free }];
  const wantT4 = (count: number) => ({ model: "nvidia-t4", count, matches: (m: string) => m === "Tesla T4" });
  // The CPU-only node has the most memory: load alone would choose it.
  const cpuOnly = node("big-cpu", 64_000, []);
  const gpuNode = node("gpu-1", 8_000, t4(2, 2));
  const busyNode = node("gpu-2", 32_000, t4(2, 0));
  for (const sample of [1, 2, 3])
    for (const r of [0, 0.5, 0.99])
      assert.deepEqual(
        chooseWithGpus([cpuOnly, busyNode, gpuNode], wantT4(2), sample, () => r),
        { node: gpuNode },
      );
  // Of two that fit, the better by load.
  const other = node("gpu-3", 16_000, [...t4(1, 1), { model: "A100", count: 1, free: 1 }, ...t4(1, 1)]);
  assert.deepEqual(chooseWithGpus([gpuNode, other], wantT4(2), 3), { node: other });
  // Every node with them has them held: a 503 (waiting helps); none has that model or that many: a 400.
  assert.deepEqual(chooseWithGpus([cpuOnly, busyNode], wantT4(1), 3), { refused: "gpus_busy" });
  assert.deepEqual(chooseWithGpus([cpuOnly, gpuNode], wantT4(3), 3), { refused: "too_few_gpus" });
  assert.deepEqual(chooseWithGpus([cpuOnly, gpuNode], { model: "h100", count: 1, matches: (m) => m === "H100" }, 3), {
    refused: "no_such_gpu",
  });
  assert.deepEqual(chooseWithGpus([], wantT4(1), 3), { refused: "no_such_gpu" });
});

test("targets: a template build is placed, its log goes to its node, its status and the rest are neither", () => {
  assert.equal(buildTargetOf("POST", "/v1/agents/templates/build"), "build");
  assert.equal(buildTargetOf("POST", "/templates/build"), "build");
  assert.deepEqual(buildTargetOf("GET", "/v1/agents/templates/builds/bld_1/logs"), { logs: "bld_1" });
  assert.deepEqual(buildTargetOf("GET", "/templates/builds/bld_1/logs?x=1"), { logs: "bld_1" });
  assert.equal(buildTargetOf("GET", "/v1/agents/templates/builds/bld_1/status"), undefined);
  assert.equal(buildTargetOf("GET", "/v1/agents/templates/builds"), undefined);
  assert.equal(buildTargetOf("GET", "/v1/agents/templates/build"), undefined);
  assert.equal(buildTargetOf("GET", "/v1/agents/templates/builds/%E0%A4%A/logs"), undefined);
  assert.deepEqual(buildTargetOf("DELETE", "/v1/agents/templates/builds/bld_1"), { cancel: "bld_1" });
  assert.deepEqual(buildTargetOf("DELETE", "/templates/builds/bld_1"), { cancel: "bld_1" });
  assert.equal(buildTargetOf("DELETE", "/v1/agents/templates/builds/bld_1/logs"), undefined);
  assert.equal(buildTargetOf("GET", "/v1/agents/templates/builds/bld_1"), undefined);
});

test("lease: an epoch is lost when its lease expired or a later join replaced it", () => {
  assert.equal(isLost({ epoch: 3, leaseEpoch: 3 }), false);
  assert.equal(isLost({ epoch: 3, leaseEpoch: null }), true);
  assert.equal(isLost({ epoch: 3, leaseEpoch: 4 }), true);
});

test("lease: a node serves its sandboxes only within a lease of its last renewal", () => {
  assert.equal(mayServe(10_000, 10_000, 3000), true);
  assert.equal(mayServe(10_000, 12_999, 3000), true);
  assert.equal(mayServe(10_000, 13_000, 3000), false);
});

test("routes: stored as `node epoch`, read back, and where a request goes", () => {
  assert.equal(formatRoute({ node: "node-a", epoch: 7 }), "node-a 7");
  assert.deepEqual(parseRoute("node a 7"), { node: "node a", epoch: 7 });
  assert.equal(parseRoute(null), undefined);
  assert.equal(parseRoute("x"), undefined);
  assert.equal(parseRoute("x y"), undefined);
  const self = { id: "a", epoch: 2 };
  const leases: Record<string, number | null> = { b: 5, c: null };
  const lease = (n: string) => leases[n];
  assert.equal(routeTarget({ node: "a", epoch: 2 }, self, lease), "local");
  // An earlier epoch of this node: fenced, never served.
  assert.equal(routeTarget({ node: "a", epoch: 1 }, self, lease), "stale");
  assert.equal(routeTarget({ node: "b", epoch: 5 }, self, lease), "forward");
  assert.equal(routeTarget({ node: "b", epoch: 4 }, self, lease), "stale");
  assert.equal(routeTarget({ node: "c", epoch: 1 }, self, lease), "stale");
  assert.equal(routeTarget({ node: "d", epoch: 1 }, self, lease), "stale");
});

test("routes: a looked-up route is reused for 2 s, then expired (read again), and one never looked up is not expired", async () => {
  const reads: string[] = [];
  // Only get() is used by lookup(): the routes Redis would answer.
  const redis = {
    get: async (key: string) => {
      reads.push(key);
      return key.endsWith(":sbx-a") ? "node-b 3" : null;
    },
  } as unknown as Redis;
  const routing = new RoutingMap(redis, { id: "node-a", epoch: 1 }, () => {});
  assert.equal(routing.expired("sbx-a", 0), false);
  assert.deepEqual(await routing.lookup("sbx-a", 1000), { node: "node-b", epoch: 3 });
  assert.deepEqual(routing.cached("sbx-a", 2999), { node: "node-b", epoch: 3 });
  assert.equal(routing.expired("sbx-a", 2999), false);
  assert.equal(routing.cached("sbx-a", 3000), undefined);
  assert.equal(routing.expired("sbx-a", 3000), true);
  assert.equal(reads.length, 1);
  // Read again: fresh for another 2 s.
  await routing.lookup("sbx-a", 3000);
  assert.equal(reads.length, 2);
  assert.equal(routing.expired("sbx-a", 4000), false);
  // No route (an ended sandbox) is cached too, and expires the same way; forgotten, it is unknown.
  assert.equal(await routing.lookup("sbx-gone", 0), undefined);
  assert.equal(routing.expired("sbx-gone", 2000), true);
  routing.forget("sbx-gone");
  assert.equal(routing.expired("sbx-gone", 2000), false);
});

test("channel: a signed request verifies for its method and path, within the time window, with the secret", () => {
  const now = 1_700_000_000_000;
  const headers = sign("s3cret", "node-a", "POST", "/v1/agents/sandboxes/x/code/run", now);
  assert.equal(verify("s3cret", headers, "POST", "/v1/agents/sandboxes/x/code/run", now + 1000), "valid");
  assert.equal(verify("other", headers, "POST", "/v1/agents/sandboxes/x/code/run", now), "invalid");
  assert.equal(verify("s3cret", headers, "GET", "/v1/agents/sandboxes/x/code/run", now), "invalid");
  assert.equal(verify("s3cret", headers, "POST", "/v1/agents/sandboxes/y/code/run", now), "invalid");
  assert.equal(verify("s3cret", headers, "POST", "/v1/agents/sandboxes/x/code/run", now + 120_000), "invalid");
  assert.equal(verify("s3cret", headers, "POST", "/v1/agents/sandboxes/x/code/run", now + 11_000), "invalid", "the window is 10 s");
  assert.equal(verify("s3cret", {}, "POST", "/", now), "none");
  assert.equal(verify("s3cret", { "x-agentbox-node": "a" }, "POST", "/", now), "invalid");
});

test("targets: the sandbox of native, operator and E2B routes (path or E2b-Sandbox-Id), and creates", () => {
  const of = (method: string, url: string, headers = {}) => (mayTarget(url) ? targetOf(method, url, headers) : "passes");
  const sbx = { sandbox: "s-1" };
  assert.deepEqual(of("POST", "/v1/agents/sandboxes/s-1/code/run"), sbx);
  assert.deepEqual(of("GET", "/sandboxes/s-1?x=1"), sbx);
  assert.deepEqual(of("DELETE", "/v1/admin/sandboxes/s-1"), sbx);
  assert.deepEqual(of("GET", "/e2b/sandboxes/s-1"), sbx);
  assert.deepEqual(of("POST", "/e2b/v2/sandboxes/s-1/connect"), sbx);
  assert.deepEqual(of("POST", "/e2b/process.Process/Start", { "e2b-sandbox-id": "s-1" }), sbx);
  assert.deepEqual(of("GET", "/e2b/files?path=/x", { "e2b-sandbox-id": " s-1 " }), sbx);
  assert.deepEqual(of("POST", "/v1/agents/sandboxes/a%20b/files/read"), { sandbox: "a b" });
  for (const url of ["/v1/agents/sandboxes", "/sandboxes/", "/e2b/sandboxes", "/e2b/v2/sandboxes?x=1"]) {
    assert.equal(of("POST", url), "create", url);
    assert.equal(of("GET", url), undefined, url);
  }
  // Not about one sandbox: E2B's lists and templates without the header, other areas, a malformed id.
  assert.equal(of("GET", "/e2b/snapshots"), undefined);
  assert.equal(of("POST", "/e2b/process.Process/Start"), undefined);
  assert.equal(of("GET", "/v1/admin/nodes"), "passes");
  assert.equal(of("POST", "/v1/vectors/indexes"), "passes");
  assert.equal(of("GET", "/v1/agents/sandboxes/%E0%A4%A/files"), undefined);
});

test("channel: every signed request has its own nonce, and an owner takes a signed request once (a replay is refused)", () => {
  const now = 1_700_000_000_000;
  const run = "/v1/agents/sandboxes/x/code/run";
  const a = new ChannelAuth("s3cret", "node-a");
  const first = a.sign("POST", run, now);
  const second = a.sign("POST", run, now);
  assert.notEqual(first["x-agentbox-node-nonce"], second["x-agentbox-node-nonce"], "a new nonce per request");
  assert.match(first["x-agentbox-node-nonce"] as string, /^[A-Za-z0-9_-]{22}$/);

  const owner = new ChannelAuth("s3cret", "node-b");
  assert.equal(owner.verify(first, "POST", run, now + 1000), "valid");
  // The same request's headers checked again on its way (the relay, then the hook): the same answer.
  assert.equal(owner.verify(first, "POST", run, now + 1000), "valid");
  // The same headers sent again (a new request, a copy of them): refused, however often.
  for (let i = 0; i < 3; i++) assert.equal(owner.verify({ ...first }, "POST", run, now + 2000), "invalid", "a replay");
  assert.equal(owner.verify({ ...second }, "POST", run, now + 2000), "valid", "another request of the same line is its own");
  // Still refused much later (another generation of nonces), and out of the window anyway.
  assert.equal(owner.verify({ ...first }, "POST", run, now + 9_000), "invalid");
  assert.equal(owner.verify({ ...first }, "POST", run, now + 25_000), "invalid");

  const fresh = () => a.sign("POST", run, now);
  assert.equal(owner.verify(fresh(), "POST", "/v1/agents/sandboxes/y/code/run", now), "invalid");
  assert.equal(owner.verify(fresh(), "GET", run, now), "invalid");
  assert.equal(owner.verify(fresh(), "POST", run, now + 11_000), "invalid", "the window is 10 s");
  assert.equal(owner.verify({ ...fresh(), "x-agentbox-node": "node-c" }, "POST", run, now), "invalid");
  assert.equal(owner.verify({ ...fresh(), "x-agentbox-node-nonce": "A".repeat(22) }, "POST", run, now), "invalid", "the nonce is signed");
  const { "x-agentbox-node-nonce": _, ...noNonce } = fresh();
  assert.equal(owner.verify(noNonce, "POST", run, now), "invalid", "a nonce is required");
  assert.equal(new ChannelAuth("other", "node-b").verify(fresh(), "POST", run, now), "invalid");
  assert.equal(owner.verify({}, "POST", "/", now), "none");

  // The client's Host travels signed: another origin, or one added to a request signed without, is refused.
  const withHost = a.sign("GET", "/v1/agents/sandboxes/x/ports/8000/", now, "x.example");
  assert.equal(withHost["x-agentbox-origin-host"], "x.example");
  assert.equal(
    owner.verify({ ...withHost, "x-agentbox-origin-host": "evil.example" }, "GET", "/v1/agents/sandboxes/x/ports/8000/", now),
    "invalid",
  );
  assert.equal(owner.verify({ ...fresh(), "x-agentbox-origin-host": "evil.example" }, "POST", run, now), "invalid");
  assert.equal(owner.verify(withHost, "GET", "/v1/agents/sandboxes/x/ports/8000/", now), "valid");

  // Bounded: past its nonces per generation, an owner refuses new signed requests until the next swap.
  const small = new ChannelAuth("s3cret", "node-b", 2);
  assert.equal(small.verify(fresh(), "POST", run, now), "valid");
  assert.equal(small.verify(fresh(), "POST", run, now), "valid");
  assert.equal(small.verify(fresh(), "POST", run, now), "invalid");
});

test("targets: a deployment's status and delete name it, a create is placed, the list is neither", () => {
  assert.equal(deploymentTargetOf("POST", "/v1/deployments/create"), "create");
  assert.equal(deploymentTargetOf("GET", "/v1/deployments/create"), undefined);
  assert.deepEqual(deploymentTargetOf("GET", "/v1/deployments/dep_1?x=1"), { deployment: "dep_1", method: "GET" });
  assert.deepEqual(deploymentTargetOf("DELETE", "/v1/deployments/delete/dep_%31"), { deployment: "dep_1", method: "DELETE" });
  assert.equal(deploymentTargetOf("GET", "/v1/deployments/list"), undefined);
  assert.equal(deploymentTargetOf("DELETE", "/v1/deployments/dep_1"), undefined);
  assert.equal(deploymentTargetOf("GET", "/v1/deployments/delete/dep_1"), undefined);
  assert.equal(deploymentTargetOf("GET", "/v1/deployments/%E0%A4%A"), undefined);
});

test("vector owners: one owner per index whatever the nodes' order, indexes spread over the nodes, and a node joining or leaving moves only its own", () => {
  const ids = Array.from({ length: 3000 }, (_, i) => `vi_${i.toString(16).padStart(32, "0")}`);
  const three = ["exec-1", "exec-2", "exec-3"];
  const owners = ids.map((id) => rendezvousOwner(id, three));
  assert.deepEqual(
    ids.map((id) => rendezvousOwner(id, [...three].reverse())),
    owners,
  );
  for (const n of three) {
    const share = owners.filter((o) => o === n).length / ids.length;
    assert.ok(share > 0.28 && share < 0.39, `${n} owns ${share} of the indexes`);
  }
  // exec-2 leaves: only its indexes move, spread over the other two.
  const two = ["exec-1", "exec-3"];
  ids.forEach((id, i) => {
    const now = rendezvousOwner(id, two);
    if (owners[i] !== "exec-2") assert.equal(now, owners[i]);
    else assert.ok(now === "exec-1" || now === "exec-3");
  });
  // exec-4 joins: an index moves only to it, about a quarter of them.
  const four = [...three, "exec-4"];
  let moved = 0;
  ids.forEach((id, i) => {
    const now = rendezvousOwner(id, four);
    if (now !== owners[i]) {
      assert.equal(now, "exec-4");
      moved++;
    }
  });
  assert.ok(moved / ids.length > 0.2 && moved / ids.length < 0.3, `${moved} of ${ids.length} moved`);
  assert.equal(rendezvousOwner("vi_x", []), undefined);
  // Executors that are up serve vectors; API nodes and draining, lost or drained nodes do not.
  assert.equal(servesVectors({ state: "up", roles: "executor" }), true);
  assert.equal(servesVectors({ state: "up", roles: "both" }), true);
  assert.equal(servesVectors({ state: "up", roles: "api" }), false);
  for (const state of ["draining", "lost", "drained"] as const) assert.equal(servesVectors({ state, roles: "both" }), false);
});
