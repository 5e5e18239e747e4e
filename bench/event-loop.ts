// Event-loop block during a burst of creates (`node --import tsx bench/event-loop.ts`): how long
// the service's event loop is held while sandboxes are started and torn down (forks of
// launchers, mount, umount). Reads the service's own monitorEventLoopDelay histogram
// (agentbox_nodejs_eventloop_lag_*, reset at every scrape of /metrics) around a burst of
// EL_CREATES creates, EL_PARALLEL at a time, each killed at once, and the pool refilling after it.
// Also prints the service's and its spawner's resident memory (what each fork would copy).
import { execFileSync } from "node:child_process";
import { startServer } from "../test/helpers/server.js";
import { sleep } from "./lib.js";

async function lag(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^agentbox_(nodejs_eventloop_lag_(?:max|p50|p99|mean)_seconds|process_resident_memory_bytes) (\S+)$/gm)) {
    out[m[1] as string] = Number(m[2]);
  }
  return out;
}

function rssMb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(execFileSync("cat", [`/proc/${pid}/status`], { encoding: "utf8" }))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

async function main(): Promise<void> {
  const creates = Number(process.env.EL_CREATES ?? 100);
  const parallel = Number(process.env.EL_PARALLEL ?? 10);
  const server = await startServer({ env: { AGENTBOX_RATE_LIMIT_PER_MINUTE: "0", AGENTBOX_WARM_POOL: "8", AGENTBOX_LOG_LEVEL: "warn" } });
  const headers = { authorization: `Bearer ${server.key}`, "content-type": "application/json" };
  try {
    await sleep(Number(process.env.EL_SETTLE_MS ?? 8000));
    await lag(server.url);
    const idle = await lag(server.url);
    let done = 0;
    let refused = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (done < creates) {
          const res = await fetch(`${server.url}/v1/agents/sandboxes`, { method: "POST", headers, body: "{}" });
          const body = (await res.json()) as { sandbox_id?: string };
          if (res.status !== 201) {
            refused += 1;
            await sleep(100);
            continue;
          }
          done += 1;
          await fetch(`${server.url}/v1/agents/sandboxes/${body.sandbox_id}`, { method: "DELETE", headers });
        }
      }),
    );
    const burstMs = performance.now() - t0;
    // The pool refills and the teardowns finish after the last create.
    await sleep(3000);
    const burst = await lag(server.url);
    const children = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(server.process.pid)], { encoding: "utf8" });
    const spawnerPid = Number(/^\s*(\d+).*spawner-main/m.exec(children)?.[1] ?? 0);
    const ms = (s: number | undefined) => ((s ?? Number.NaN) * 1000).toFixed(1);
    process.stdout.write(
      `### Event loop of the service during ${creates} create+kill (${parallel} at a time; ${refused} refused), ${(burstMs / 1000).toFixed(1)} s + 3 s of refill\n\n` +
        "| window | lag max ms | lag p99 ms | lag p50 ms | lag mean ms |\n| --- | ---: | ---: | ---: | ---: |\n" +
        `| idle | ${ms(idle.nodejs_eventloop_lag_max_seconds)} | ${ms(idle.nodejs_eventloop_lag_p99_seconds)} | ${ms(idle.nodejs_eventloop_lag_p50_seconds)} | ${ms(idle.nodejs_eventloop_lag_mean_seconds)} |\n` +
        `| burst | ${ms(burst.nodejs_eventloop_lag_max_seconds)} | ${ms(burst.nodejs_eventloop_lag_p99_seconds)} | ${ms(burst.nodejs_eventloop_lag_p50_seconds)} | ${ms(burst.nodejs_eventloop_lag_mean_seconds)} |\n\n` +
        `service RSS ${((burst.process_resident_memory_bytes ?? 0) / 2 ** 20).toFixed(0)} MiB` +
        (spawnerPid ? `, spawner RSS ${rssMb(spawnerPid).toFixed(0)} MiB` : ", no spawner process") +
        `; load average ${(await import("node:os"))
          .loadavg()
          .map((l) => l.toFixed(2))
          .join(" ")}\n`,
    );
  } finally {
    await server.dispose();
  }
}

await main();
