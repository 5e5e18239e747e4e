// Benchmark of streamed runs: how soon a client sees output. A run that prints at once, timed
// from the request to its first `stdout` event and to its `end`, against the same run answered
// plainly (the baseline, same server, same sandbox); a run that prints and then works for 200 ms
// (the first event must not wait for the end); and the delay from the print inside the sandbox to
// the event at the client (both read the host's clock).
import http from "node:http";
import { startServer } from "../test/helpers/server.js";
import { machineLine } from "./code-run.js";
import { keepAliveClient, printTable, type Row, published } from "./lib.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 300);

interface Streamed {
  firstMs: number;
  endMs: number;
  /** Epoch ms at which the first stdout event arrived. */
  firstAtEpoch: number;
  firstText: string;
}

/** One streamed request over a keep-alive agent, timing its first stdout event and its end event. */
function streamed(server: { port: number; key: string }, agent: http.Agent, path: string, body: unknown): Promise<Streamed> {
  const data = JSON.stringify(body);
  const headers = { authorization: `Bearer ${server.key}`, "content-type": "application/json", "content-length": Buffer.byteLength(data) };
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first: { ms: number; epoch: number; text: string } | undefined;
    let buf = "";
    const req = http.request({ host: "127.0.0.1", port: server.port, path, method: "POST", agent, headers }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buf += chunk;
        if (first === undefined) {
          const at = buf.indexOf("event: stdout\ndata: ");
          const nl = at >= 0 ? buf.indexOf("\n\n", at) : -1;
          if (nl >= 0) {
            const ms = performance.now() - t0;
            first = { ms, epoch: performance.timeOrigin + t0 + ms, text: (JSON.parse(buf.slice(at + 20, nl)) as { text: string }).text };
          }
        }
      });
      res.on("end", () => {
        if (!first || !buf.includes("event: end\n")) return reject(new Error(`no stdout or end event: ${buf}`));
        resolve({ firstMs: first.ms, endMs: performance.now() - t0, firstAtEpoch: first.epoch, firstText: first.text });
      });
    });
    req.on("error", reject);
    req.end(data);
  });
}

export async function benchStreaming(): Promise<string> {
  const server = await startServer({
    env: { AGENTBOX_WARM_POOL: "2", AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000", AGENTBOX_MAX_CONCURRENT_RUNS_PER_KEY: "1000" },
  });
  const call = keepAliveClient(server);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const created = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    if (created.status !== 201) throw new Error(`create failed: ${JSON.stringify(created.body)}`);
    const path = `/v1/agents/sandboxes/${created.body.sandbox_id}/code/run`;
    const printNow = { code: "print(1)", language: "python" };
    const plain: number[] = [];
    const first: number[] = [];
    const end: number[] = [];
    for (let i = 0; i < 20; i++) {
      await call("POST", path, printNow);
      await streamed(server, agent, path, { ...printNow, stream: true });
    }
    // Interleaved, so both see the same machine state.
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      const res = await call<{ logs: { stdout: string } }>("POST", path, printNow);
      if (res.status !== 200 || res.body.logs.stdout !== "1\n") throw new Error(`bad run: ${JSON.stringify(res.body)}`);
      plain.push(performance.now() - t0);
      const s = await streamed(server, agent, path, { ...printNow, stream: true });
      first.push(s.firstMs);
      end.push(s.endMs);
    }
    const slowFirst: number[] = [];
    const slowEnd: number[] = [];
    const printToEvent: number[] = [];
    const slowRuns = Math.max(20, Math.floor(RUNS / 10));
    for (let i = 0; i < slowRuns; i++) {
      const code = "import time\nprint(repr(time.time()), flush=True)\ntime.sleep(0.2)";
      const s = await streamed(server, agent, path, { code, language: "python", stream: true });
      slowFirst.push(s.firstMs);
      slowEnd.push(s.endMs);
      printToEvent.push(Math.max(0, s.firstAtEpoch - Number(s.firstText) * 1000));
    }
    const rows: Row[] = [
      { name: "plain code/run python print(1): request → answer (baseline)", samples: plain },
      { name: "streamed print(1): request → first stdout event", samples: first },
      { name: "streamed print(1): request → end event", samples: end },
      { name: "streamed print, then 200 ms of work: request → first stdout event", samples: slowFirst },
      { name: "streamed print, then 200 ms of work: request → end event", samples: slowEnd },
      { name: "print inside the sandbox → stdout event at the client", samples: printToEvent },
    ];
    return await published("streaming", printTable("Streaming: first output (python, warm kernel, keep-alive)", rows), machineLine);
  } finally {
    agent.destroy();
    await server.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchStreaming();
