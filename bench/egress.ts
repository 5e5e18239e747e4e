// Egress proxy overhead: a 10 MB download by python inside a sandbox through the egress path
// (relay in the sandbox → the host's proxy → a server on the host's loopback), against the same
// download from a server on the sandbox's own loopback (same client, no proxy) and a direct
// download on the host, all in the same run.
import http from "node:http";
import { pathToFileURL } from "node:url";
import { startInternet } from "../test/helpers/internet.js";
import { startServer } from "../test/helpers/server.js";
import { machineLine } from "./code-run.js";
import { keepAliveClient, printTable, type Row, publishTable } from "./lib.js";

const SIZE = 10 * 2 ** 20;
const ROUNDS = 15;

/** Python that downloads `url` ROUNDS times (through `proxy`, or none) and prints each time in ms. */
function downloads(url: string, proxy: string | null): string {
  return `
import time, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler(${proxy ? `{"http": "${proxy}"}` : "{}"}))
times = []
for _ in range(${ROUNDS}):
    t0 = time.perf_counter()
    with opener.open("${url}", timeout=60) as r:
        n = 0
        while True:
            b = r.read(1 << 20)
            if not b: break
            n += len(b)
    assert n == ${SIZE}, n
    times.append((time.perf_counter() - t0) * 1000)
print(" ".join("%.3f" % t for t in times))
`;
}

function hostDownload(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    http
      .get(url, (res) => {
        let n = 0;
        res.on("data", (d: Buffer) => {
          n += d.length;
        });
        res.on("end", () => (n === SIZE ? resolve(performance.now() - t0) : reject(new Error(`got ${n} bytes`))));
      })
      .on("error", reject);
  });
}

export async function benchEgress(): Promise<void> {
  const internet = await startInternet();
  const server = await startServer({ env: { AGENTBOX_EGRESS_HOSTS: `files.test=127.0.0.1:${internet.port}` } });
  try {
    const call = keepAliveClient(server);
    const created = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {
      network: { allow_out: ["files.test"] },
      timeout: 600,
    });
    const id = created.body.sandbox_id;
    const run = async (code: string): Promise<number[]> => {
      const res = await call<{ logs: { stdout: string; stderr: string }; error: string | null }>(
        "POST",
        `/v1/agents/sandboxes/${id}/code/run`,
        {
          language: "python",
          code,
          timeout: 300,
        },
      );
      if (res.body.error) throw new Error(`${res.body.error}\n${res.body.logs.stderr}`);
      return res.body.logs.stdout.trim().split(" ").map(Number);
    };
    // A 10 MB file served by python's http.server on the sandbox's own loopback: the no-proxy baseline.
    await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
      command: `mkdir -p /tmp/www && head -c ${SIZE} /dev/zero > /tmp/www/blob`,
    });
    await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
      command: "python3 -m http.server 8080 --bind 127.0.0.1 --directory /tmp/www",
      background: true,
    });
    await run(
      "import socket, time\nfor _ in range(100):\n    try:\n        socket.create_connection(('127.0.0.1', 8080)).close(); break\n    except OSError: time.sleep(0.05)\nprint(0)",
    );
    const proxied = await run(downloads(`http://files.test/bytes/${SIZE}`, "http://127.0.0.1:3128"));
    const local = await run(downloads("http://127.0.0.1:8080/blob", null));
    const host: number[] = [];
    for (let i = 0; i < ROUNDS; i++) host.push(await hostDownload(`http://127.0.0.1:${internet.port}/bytes/${SIZE}`));
    const rows: Row[] = [
      { name: "10 MB via egress proxy (sandbox → relay → host proxy → host loopback server)", samples: proxied },
      { name: "baseline: 10 MB from a server on the sandbox's own loopback, no proxy", samples: local },
      { name: "baseline: 10 MB direct on the host (node → loopback server)", samples: host },
    ];
    const table = printTable("Egress proxy: 10 MB download (python urllib in the sandbox)", rows);
    const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    const throughput =
      `proxy throughput p50: ${((SIZE / 2 ** 20 / p50(proxied)) * 1000).toFixed(0)} MB/s; ` +
      `in-sandbox loopback: ${((SIZE / 2 ** 20 / p50(local)) * 1000).toFixed(0)} MB/s`;
    process.stdout.write(`${throughput}\n\n`);
    await publishTable("egress", `${table}\n\n${throughput}`, machineLine);
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  } finally {
    await server.dispose();
    await internet.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await benchEgress();
