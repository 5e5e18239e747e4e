// How many live sandboxes with a warm python kernel fit on this machine: creates N sandboxes,
// runs python in each, and reads the memory they use (the host's available memory before/after).
import fs from "node:fs";
import { client, startServer } from "../test/helpers/server.js";
import { machineLine } from "./code-run.js";
import { published } from "./lib.js";

const N = Number(process.env.BENCH_DENSITY ?? 200);

function availableMb(): number {
  const m = /MemAvailable:\s+(\d+)/.exec(fs.readFileSync("/proc/meminfo", "utf8"));
  return Number(m?.[1] ?? 0) / 1024;
}

export async function benchDensity(): Promise<string> {
  const server = await startServer({
    env: {
      // No pool (it would grow with the creates): every create is a cold start, and only the
      // measured sandboxes take memory.
      AGENTBOX_WARM_POOL: "0",
      AGENTBOX_WARM_POOL_MAX: "0",
      AGENTBOX_MAX_SANDBOXES: String(N + 10),
      AGENTBOX_MAX_SANDBOXES_PER_TENANT: String(N + 10),
      AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000",
    },
  });
  const call = client(server);
  try {
    await new Promise((r) => setTimeout(r, 500));
    const before = availableMb();
    const ids: string[] = [];
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { timeout: 600 });
      if (res.status !== 201) throw new Error(`create ${i} failed: ${JSON.stringify(res.body)}`);
      ids.push(res.body.sandbox_id);
      const run = await call<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${res.body.sandbox_id}/code/run`, {
        code: "x = 1\nprint(x)",
        language: "python",
      });
      if (run.body.logs.stdout !== "1\n") throw new Error(`run ${i} failed: ${JSON.stringify(run.body)}`);
    }
    const createMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 1000));
    const used = before - availableMb();
    const perSandbox = used / N;
    const text = [
      "### live sandboxes with a warm python kernel",
      "",
      "| sandboxes | host memory used | per sandbox | fit in 75% of this machine's memory | cold create + first run, mean |",
      "| ---: | ---: | ---: | ---: | ---: |",
      `| ${N} | ${used.toFixed(0)} MiB | ${perSandbox.toFixed(1)} MiB | ${Math.floor((before * 0.75) / perSandbox)} | ${(createMs / N).toFixed(1)} ms |`,
    ].join("\n");
    process.stdout.write(`${text}\n\n`);
    for (const id of ids) await call("DELETE", `/v1/agents/sandboxes/${id}`);
    return await published("density", text, machineLine);
  } finally {
    await server.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchDensity();
}
