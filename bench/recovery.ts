// Recovery benchmark (`npm run bench:recovery`): what a crash of the service costs its users. N
// sandboxes with a file each are live when the service is killed with SIGKILL (every sandbox's
// processes die with it: bubblewrap's --die-with-parent); the service is started again on the same
// data dir and re-adopts them. Measured: restart to /health, restart until every sandbox has
// answered a run that reads its file back (kernels start fresh), and each sandbox's first run after
// the restart; the same run's baselines are a start on an empty data dir and a fresh sandboxed
// python (the machine's own speed, comparable across machines).
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { buildSeccompFilter } from "../src/sandbox/seccomp.js";
import { removeWorkspaces, startServer } from "../test/helpers/server.js";
import { freshRun, machineLine } from "./code-run.js";
import { keepAliveClient, printTable, type Row, timed, published } from "./lib.js";

const SANDBOXES = Number(process.env.BENCH_RECOVERY_SANDBOXES ?? 50);
const ROUNDS = Number(process.env.BENCH_RECOVERY_ROUNDS ?? 3);
/** Re-adopted sandboxes asked in parallel (a client fleet reconnecting). */
const PARALLEL = 8;

async function pooled<T>(items: T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/** The machine's own speed: a fresh sandboxed python per run, same flags as the service's sandboxes. */
async function machineSpeed(runs: number): Promise<number[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-bench-fresh-"));
  fs.chmodSync(dir, 0o777);
  const seccomp = buildSeccompFilter();
  const samples: number[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const [ms] = await timed(() => freshRun(dir, 65534, seccomp, ["/usr/bin/python3", "-I", "-c", "print(1)"]));
      samples.push(ms);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return samples;
}

interface Round {
  coldStartMs: number;
  restartToHealthMs: number;
  restartToAllRunsMs: number;
  firstRuns: number[];
}

async function round(): Promise<Round> {
  const [coldStartMs, empty] = await timed(() => startServer());
  await empty.dispose();

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-bench-recovery-"));
  const key = `bench_${crypto.randomBytes(12).toString("hex")}`;
  const first = await startServer({ dataDir, key, env: { AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000" } });
  const call = keepAliveClient(first);
  const ids: string[] = [];
  for (let i = 0; i < SANDBOXES; i++) {
    const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { timeout: 3600 });
    if (res.status !== 201) throw new Error(`create ${i}: ${res.status} ${JSON.stringify(res.body)}`);
    ids.push(res.body.sandbox_id);
    const write = await call("POST", `/v1/agents/sandboxes/${res.body.sandbox_id}/files/write`, { path: "kept.txt", content: `kept ${i}` });
    if (write.status !== 200) throw new Error(`write ${i}: ${write.status}`);
  }
  await first.crash();

  const t0 = performance.now();
  const second = await startServer({
    dataDir,
    key,
    workspaceDir: first.workspaceDir,
    env: { AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000" },
  });
  const restartToHealthMs = performance.now() - t0;
  const again = keepAliveClient(second);
  const firstRuns: number[] = [];
  await pooled(ids, PARALLEL, async (id) => {
    const i = ids.indexOf(id);
    const [ms, res] = await timed(() =>
      again<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
        language: "python",
        code: "print(open('kept.txt').read())",
      }),
    );
    if (res.status !== 200 || res.body.logs.stdout !== `kept ${i}\n`)
      throw new Error(`sandbox ${i} after the restart: ${res.status} ${JSON.stringify(res.body)}`);
    firstRuns.push(ms);
  });
  const restartToAllRunsMs = performance.now() - t0;
  await second.dispose();
  removeWorkspaces(first.workspaceDir);
  return { coldStartMs, restartToHealthMs, restartToAllRunsMs, firstRuns };
}

export async function benchRecovery(): Promise<string> {
  const speed = await machineSpeed(20);
  const rounds: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round());
  const rows: Row[] = [
    { name: "**baseline:** fresh sandboxed `python3 -c 'print(1)'` (machine speed)", samples: speed },
    { name: "**baseline:** service start, empty data dir, to /health", samples: rounds.map((r) => r.coldStartMs) },
    { name: `restart after kill -9 with ${SANDBOXES} live sandboxes, to /health`, samples: rounds.map((r) => r.restartToHealthMs) },
    {
      name: `restart until all ${SANDBOXES} sandboxes answered a run with their files (${PARALLEL} clients)`,
      samples: rounds.map((r) => r.restartToAllRunsMs),
    },
    { name: "first run in a re-adopted sandbox (fresh kernel)", samples: rounds.flatMap((r) => r.firstRuns) },
  ];
  const table = printTable(`Recovery from kill -9 (${ROUNDS} rounds, every round reported in the samples)`, rows);
  for (const [i, r] of rounds.entries()) {
    console.log(
      `round ${i + 1}: cold start ${r.coldStartMs.toFixed(0)} ms, restart to /health ${r.restartToHealthMs.toFixed(0)} ms, to every sandbox answering ${r.restartToAllRunsMs.toFixed(0)} ms`,
    );
  }
  console.log(
    `load average at the end: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  return await published("recovery", table, machineLine);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await benchRecovery();
