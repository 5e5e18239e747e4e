// Inference gateway overhead: a scripted OpenAI-compatible upstream on loopback, called directly and
// through the gateway (the real service) in the same run, alternating in batches so both see the same
// machine. Measures a non-streamed completion (whole answer) and a streamed one's time to first byte
// of the body, one request at a time (latency) and with several clients at once (throughput), and
// prints the added overhead at p50/p95/p99. Target: at most 1 ms added at p50.
//
//   node --import tsx bench/gateway.ts        (BENCH_N=requests per measure, BENCH_CONCURRENCY=clients)
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { startServer } from "../test/helpers/server.js";
import { startUpstream } from "../test/helpers/upstream.js";
import { machineLine } from "./code-run.js";
import { added, directVersusVia, type PostTarget, printTable, type Row, timedPost as once, published } from "./lib.js";

const N = Number(process.env.BENCH_N ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const BATCH = 100;

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

async function concurrent(t: PostTarget, body: Buffer, count: number): Promise<number> {
  let left = count;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await once(t, body);
    }),
  );
  return performance.now() - t0;
}

export async function benchGateway(): Promise<string> {
  const upstream = await startUpstream({ record: false });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-bench-gw-"));
  const file = path.join(dir, "providers.json");
  fs.writeFileSync(
    file,
    JSON.stringify({ providers: [{ name: "loopback", type: "openai", base_url: upstream.baseUrl, models: ["echo"], retries: 0 }] }),
  );
  const server = await startServer({
    env: { AGENTBOX_PROVIDERS_FILE: file, AGENTBOX_RATE_LIMIT_PER_MINUTE: "0", AGENTBOX_WARM_POOL: "0", AGENTBOX_LOG_LEVEL: "error" },
  });
  try {
    const direct: PostTarget = {
      port: upstream.port,
      agent,
      path: "/v1/chat/completions",
      headers: { "content-type": "application/json" },
    };
    const gateway: PostTarget = {
      port: server.port,
      agent,
      path: "/v1/inference/chat/completions",
      headers: { "content-type": "application/json", authorization: `Bearer ${server.key}` },
    };
    const messages = [
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "Say hello to the benchmark in a few words, please." },
    ];
    const plain = Buffer.from(JSON.stringify({ model: "echo", messages, temperature: 0.2, max_tokens: 64 }));
    const streamed = Buffer.from(JSON.stringify({ model: "echo", messages, stream: true, max_tokens: 64 }));

    // Warm up both paths (connections, JIT), then alternate batches.
    const s = await directVersusVia(direct, gateway, plain, streamed, { n: N, batch: BATCH, warmup: 300 });
    const wall = {
      directPlain: await concurrent(direct, plain, N),
      gwPlain: await concurrent(gateway, plain, N),
      directStream: await concurrent(direct, streamed, N),
      gwStream: await concurrent(gateway, streamed, N),
    };
    const rows: Row[] = [
      { name: "completion, direct to upstream", samples: s.directPlain },
      { name: "completion, through gateway", samples: s.viaPlain },
      { name: "stream TTFB, direct to upstream", samples: s.directTtfb },
      { name: "stream TTFB, through gateway", samples: s.viaTtfb },
      {
        name: `completion, direct, ${CONCURRENCY} clients (throughput)`,
        samples: [wall.directPlain / N],
        wallMs: wall.directPlain,
        ops: N,
      },
      { name: `completion, gateway, ${CONCURRENCY} clients (throughput)`, samples: [wall.gwPlain / N], wallMs: wall.gwPlain, ops: N },
      { name: `stream, direct, ${CONCURRENCY} clients (throughput)`, samples: [wall.directStream / N], wallMs: wall.directStream, ops: N },
      { name: `stream, gateway, ${CONCURRENCY} clients (throughput)`, samples: [wall.gwStream / N], wallMs: wall.gwStream, ops: N },
    ];
    const table = printTable(`Inference gateway overhead (${N} sequential requests per measure, loopback upstream)`, rows);
    const lines = [
      "| added by the gateway | p50 ms | p95 ms | p99 ms |",
      "| --- | ---: | ---: | ---: |",
      `| completion | ${[50, 95, 99].map((p) => added(s.directPlain, s.viaPlain, p).toFixed(3)).join(" | ")} |`,
      `| stream TTFB | ${[50, 95, 99].map((p) => added(s.directTtfb, s.viaTtfb, p).toFixed(3)).join(" | ")} |`,
    ];
    const p50 = added(s.directPlain, s.viaPlain, 50);
    lines.push("", `Target: ≤ 1 ms added at p50 — completion ${p50 <= 1 ? "met" : "NOT met"} (${p50.toFixed(3)} ms).`);
    process.stdout.write(`${lines.join("\n")}\n\n`);
    return await published("gateway", `${table}\n\n${lines.join("\n")}`, machineLine);
  } finally {
    await server.dispose();
    await upstream.close();
    agent.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchGateway();
