// Deployments' pure parts: nvidia-smi's CSV, and the operator's server-command setting.
import assert from "node:assert/strict";
import { test } from "node:test";
import { gpuMatches, parseNvidiaSmi } from "../../src/deployments/accelerators.js";
import { loadDeploymentsConfig } from "../../src/deployments/settings.js";

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
