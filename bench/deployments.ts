// Deployment overhead: a deployment of a tiny GGUF model (one replica), called directly on its
// replica's socket (or loopback port) and through the gateway (`model: <deployment_name>`: authentication, the
// router's least-loaded pick and queue, the replica client) in the same run, alternating in batches
// so both see the same machine. One request at a time, a 4-token answer, so generation is short
// and the difference is what the deployment adds; printed at p50/p95/p99, plus a streamed
// request's time to first byte.
//
//   node --import tsx bench/deployments.ts        (BENCH_N=requests per measure)
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { writeTinyLlama } from "../test/helpers/gguf.js";
import { eventually } from "../test/helpers/leftovers.js";
import { client, startServer } from "../test/helpers/server.js";
import { machineLine } from "./code-run.js";
import { added, directVersusVia, type PostTarget, printTable, type Row, published } from "./lib.js";

const N = Number(process.env.BENCH_N ?? 300);
const BATCH = 50;

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const socketAgent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** Where the replica listens (its unix socket, or its loopback port), from its settings in its environment (the API does not show it). */
function replicaAddress(pid: number): { port: number; socketPath?: string } {
  const env = fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  const line = env.find((l) => l.startsWith("AGENTBOX_REPLICA=")) as string;
  const settings = JSON.parse(line.slice("AGENTBOX_REPLICA=".length)) as { port: number; socket?: string };
  return { port: settings.port, socketPath: settings.socket };
}

export async function benchDeployments(): Promise<string> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-bench-dep-"));
  fs.mkdirSync(path.join(dataDir, "models"));
  writeTinyLlama(path.join(dataDir, "models", "tiny.gguf"));
  const server = await startServer({
    dataDir,
    env: { AGENTBOX_RATE_LIMIT_PER_MINUTE: "0", AGENTBOX_WARM_POOL: "0", AGENTBOX_LOG_LEVEL: "error", AGENTBOX_REPLICA_THREADS: "1" },
  });
  const call = client(server);
  try {
    const created = await call<{ deployment_id: string }>("POST", "/v1/deployments/create", {
      deployment_name: "bench",
      model_name: "tiny",
      min_replicas: 1,
      max_replicas: 1,
    });
    const id = created.body.deployment_id;
    type Item = { status: string; replicas: Array<{ pid: number }> };
    if (!(await eventually(async () => (await call<Item>("GET", `/v1/deployments/${id}`)).body.status === "running", 120_000, 100)))
      throw new Error("the deployment did not start");
    const pid = (await call<Item>("GET", `/v1/deployments/${id}`)).body.replicas[0]?.pid as number;
    const address = replicaAddress(pid);
    const direct: PostTarget = {
      ...address,
      agent: address.socketPath ? socketAgent : agent,
      path: "/v1/chat/completions",
      headers: { "content-type": "application/json" },
    };
    const gateway: PostTarget = {
      port: server.port,
      agent,
      path: "/v1/inference/chat/completions",
      headers: { "content-type": "application/json", authorization: `Bearer ${server.key}` },
    };
    const messages = [{ role: "user", content: "hello world the cat" }];
    const plain = Buffer.from(JSON.stringify({ model: "bench", messages, temperature: 0, max_tokens: 4 }));
    const streamed = Buffer.from(JSON.stringify({ model: "bench", messages, temperature: 0, max_tokens: 4, stream: true }));

    const s = await directVersusVia(direct, gateway, plain, streamed, { n: N, batch: BATCH, warmup: 30 });
    const rows: Row[] = [
      { name: "completion (4 tokens), direct to the replica", samples: s.directPlain },
      { name: "completion (4 tokens), through the deployment", samples: s.viaPlain },
      { name: "stream TTFB, direct to the replica", samples: s.directTtfb },
      { name: "stream TTFB, through the deployment", samples: s.viaTtfb },
    ];
    const table = printTable(`Deployment overhead (${N} sequential requests per measure, tiny GGUF, one replica)`, rows);
    const lines = [
      "| added by the deployment | p50 ms | p95 ms | p99 ms |",
      "| --- | ---: | ---: | ---: |",
      `| completion | ${[50, 95, 99].map((p) => added(s.directPlain, s.viaPlain, p).toFixed(3)).join(" | ")} |`,
      `| stream TTFB | ${[50, 95, 99].map((p) => added(s.directTtfb, s.viaTtfb, p).toFixed(3)).join(" | ")} |`,
    ];
    process.stdout.write(`${lines.join("\n")}\n\n`);
    await call("DELETE", `/v1/deployments/delete/${id}`);
    await eventually(async () => (await call("GET", `/v1/deployments/${id}`)).status === 404, 30_000, 100);
    return await published("deployments", `${table}\n\n${lines.join("\n")}`, machineLine);
  } finally {
    await server.dispose();
    agent.destroy();
    socketAgent.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchDeployments();
