// Deployments' pure parts: nvidia-smi's CSV, the operator's server-command setting, and which
// surviving executor takes over a lost node's deployments first.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Accelerators, freeGpus, gpuKinds, gpuMatches, parseDeclaredGpus, parseNvidiaSmi } from "../../src/deployments/accelerators.js";
import { loadDeploymentsConfig } from "../../src/deployments/settings.js";
import type { DeploymentRow } from "../../src/deployments/store.js";
import { mayTakeOver, reservedByNode, TAKEOVER_STEP_MS, takeoverRank } from "../../src/deployments/takeover.js";

function withServers<T>(value: string | undefined, fn: () => T): T {
  const before = process.env.AGENTBOX_DEPLOYMENT_SERVERS;
  if (value === undefined) delete process.env.AGENTBOX_DEPLOYMENT_SERVERS;
  else process.env.AGENTBOX_DEPLOYMENT_SERVERS = value;
  try {
    return fn();
  } finally {
    if (before === undefined) delete process.env.AGENTBOX_DEPLOYMENT_SERVERS;
    else process.env.AGENTBOX_DEPLOYMENT_SERVERS = before;
  }
}

test("nvidia-smi CSV: one accelerator per GPU line, memory in GiB; noise ignored", () => {
  const out = parseNvidiaSmi("0, NVIDIA A100-SXM4-80GB, 81920\n1, NVIDIA L4, 23034\n\nNo devices were found\n", "t");
  assert.deepEqual(
    out.map((a) => [a.accelerator_id, a.hw_type, a.hw_model, a.hw_memory]),
    [
      ["gpu-0", "gpu", "NVIDIA A100-SXM4-80GB", 80],
      ["gpu-1", "gpu", "NVIDIA L4", 22],
    ],
  );
  assert.deepEqual(parseNvidiaSmi("", "t"), []);
});

test("server commands: parsed with defaults; a command without {port} or bad JSON is refused at start", () => {
  const ok = withServers('{"llama": {"command": ["llama-server", "-m", "/m.gguf", "--port", "{port}"]}}', () => loadDeploymentsConfig());
  assert.deepEqual(ok.servers.llama, {
    command: ["llama-server", "-m", "/m.gguf", "--port", "{port}"],
    healthPath: "/health",
    tools: false,
  });
  assert.throws(() => withServers('{"x": {"command": ["srv", "--port", "8000"]}}', () => loadDeploymentsConfig()), /\{port\}/);
  assert.throws(() => withServers('{"x": {"command": []}}', () => loadDeploymentsConfig()), /non-empty array/);
  assert.throws(() => withServers("{nope", () => loadDeploymentsConfig()), /must be JSON/);
  assert.deepEqual(withServers(undefined, () => loadDeploymentsConfig()).servers, {});
});

test("gpu_model in the spellings clients use matches the GPU; another model or the CPU does not", () => {
  const [a100, t4] = parseNvidiaSmi("0, NVIDIA A100-SXM4-80GB, 81920\n1, Tesla T4, 15360\n", "t") as [never, never];
  for (const name of ["NVIDIA_A100_80GB", "nvidia-a100", "A100", "gpu-0"]) assert.ok(gpuMatches(name, a100), name);
  for (const name of ["NVIDIA_T4_16GB", "t4", "Tesla T4"]) assert.ok(gpuMatches(name, t4), name);
  for (const name of ["NVIDIA H100", "NVIDIA", "16GB", "", "gpu-1"]) assert.ok(!gpuMatches(name, a100), name);
});

const row = (id: string, node: string | null, over: Partial<DeploymentRow> = {}): DeploymentRow => ({
  id,
  tenant_id: "t1",
  name: id,
  model_name: "tiny",
  hw_type: "cpu",
  gpu_model: null,
  gpu_count: 0,
  min_replicas: 1,
  max_replicas: 1,
  status: "running",
  reason: null,
  created_at: "2026-01-01T00:00:00.000Z",
  node_id: node,
  ...over,
});

test("AGENTBOX_NODE_GPUS: declared GPUs replace detection; `none` declares none; a bad entry is refused", async () => {
  assert.deepEqual(parseDeclaredGpus("2:NVIDIA A100 80GB, NVIDIA T4"), [
    { model: "NVIDIA A100 80GB", count: 2 },
    { model: "NVIDIA T4", count: 1 },
  ]);
  assert.deepEqual(parseDeclaredGpus("none"), []);
  assert.throws(() => parseDeclaredGpus("0:NVIDIA T4"), /COUNT 1-64/);
  assert.throws(() => parseDeclaredGpus("NVIDIA T4,"), /\[COUNT:\]MODEL/);
  assert.deepEqual(loadDeploymentsConfig({ AGENTBOX_NODE_GPUS: "2:Tesla T4" }).gpus, [{ model: "Tesla T4", count: 2 }]);
  assert.equal(loadDeploymentsConfig({}).gpus, undefined);
  const list = await new Accelerators([{ model: "Tesla T4", count: 2 }]).list();
  assert.deepEqual(
    list.map((a) => [a.accelerator_id, a.hw_type, a.hw_model]),
    [
      ["cpu", "cpu", list[0]?.hw_model],
      ["gpu-0", "gpu", "Tesla T4"],
      ["gpu-1", "gpu", "Tesla T4"],
    ],
  );
  assert.equal(await new Accelerators([{ model: "Tesla T4", count: 2 }]).hasGpu("nvidia-t4", 2), true);
  assert.equal(await new Accelerators([]).hasGpu("nvidia-t4", 1), false);
});

test("GPUs held by deployments: each takes those it names; what is left is free, by model", () => {
  const gpus = parseNvidiaSmi("0, Tesla T4, 16384\n1, Tesla T4, 16384\n2, NVIDIA A100-SXM4-80GB, 81920", "t");
  assert.equal(freeGpus(gpus, []).length, 3);
  const held = [
    { gpuModel: "nvidia-t4", count: 1 },
    { gpuModel: "a100", count: 1 },
  ];
  assert.deepEqual(
    freeGpus(gpus, held).map((a) => a.accelerator_id),
    ["gpu-1"],
  );
  assert.deepEqual(gpuKinds(gpus, held), [
    { model: "Tesla T4", count: 2, free: 1 },
    { model: "NVIDIA A100-SXM4-80GB", count: 1, free: 0 },
  ]);
  // More held than there are: none free, never negative.
  assert.deepEqual(gpuKinds(gpus, [{ gpuModel: "t4", count: 5 }])[0], { model: "Tesla T4", count: 2, free: 0 });
});

test("takeover: the least loaded survivor by reserved replicas goes first, the others after a step each", () => {
  const rows = [
    row("a1", "a", { min_replicas: 2 }),
    row("b1", "b"),
    row("b2", "b", { status: "failed" }),
    row("c1", "c", { status: "deleting", min_replicas: 5 }),
    row("lost1", "lost"),
  ];
  assert.deepEqual(
    [...reservedByNode(rows)],
    [
      ["a", 2],
      ["b", 1],
      ["lost", 1],
    ],
  );
  // Placement order a, b, c: c holds nothing (its one is being deleted), then b (1), then a (2).
  const executors = ["a", "b", "c"];
  assert.deepEqual(
    executors.map((n) => takeoverRank(rows, executors, n)),
    [2, 1, 0],
  );
  assert.equal(mayTakeOver(rows, executors, "c", 0), true);
  assert.equal(mayTakeOver(rows, executors, "b", 0), false);
  assert.equal(mayTakeOver(rows, executors, "b", TAKEOVER_STEP_MS), true);
  assert.equal(mayTakeOver(rows, executors, "a", TAKEOVER_STEP_MS), false);
  assert.equal(mayTakeOver(rows, executors, "a", 2 * TAKEOVER_STEP_MS), true);
  // Ties keep the placement order; a node not among the survivors comes last.
  assert.deepEqual(
    ["y", "x"].map((n) => takeoverRank([], ["y", "x"], n)),
    [0, 1],
  );
  assert.equal(takeoverRank([], ["y", "x"], "z"), 2);
});

test("takeover: once the first survivor has taken one, the next one is the least loaded (the lost node's spread)", () => {
  const lost = [row("d1", "lost"), row("d2", "lost")];
  const executors = ["a", "b"];
  assert.equal(takeoverRank(lost, executors, "a"), 0);
  // a claimed d1: b now holds fewer.
  const after = [row("d1", "a"), row("d2", "lost")];
  assert.equal(takeoverRank(after, executors, "b"), 0);
  assert.equal(takeoverRank(after, executors, "a"), 1);
});
