// Benchmark of the data stack's first import: `import numpy, pandas, matplotlib.pyplot` as the first
// run of a new sandbox (created from the warm pool, whose idle sandboxes keep a pre-imported python
// kernel), the same import in a sandbox whose first run did not claim that kernel, and — same
// process, same machine state — the baseline of a fresh sandboxed python3 doing the import. Also
// the memory a sandbox uses before and after it imported pandas (the unique memory of its
// processes, read from the host through its cgroup: shared library pages are not counted, they
// are shared by every sandbox).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildSeccompFilter } from "../src/sandbox/seccomp.js";
import { startServer } from "../test/helpers/server.js";
import { freshRun, machineLine } from "./code-run.js";
import { keepAliveClient, median, printTable, type Row, sleep, timed, published } from "./lib.js";

const RUNS = Number(process.env.BENCH_DATA_RUNS ?? 20);
const BASELINE_RUNS = Number(process.env.BENCH_DATA_BASELINE_RUNS ?? 10);
const MEMORY_SANDBOXES = Number(process.env.BENCH_DATA_MEMORY_SANDBOXES ?? 10);
/** Long enough for the pool to refill one sandbox and for that sandbox to pre-import the stack. */
const PACE_MS = Number(process.env.BENCH_DATA_PACE_MS ?? 3000);

const IMPORT = "import numpy, pandas, matplotlib.pyplot\nprint(1)";
const FRESH_IMPORT = [
  "/usr/bin/env",
  "MPLBACKEND=Agg",
  "MATPLOTLIBRC=/usr/share/sandbox/matplotlib",
  "/usr/bin/python3",
  "-I",
  "-c",
  "import numpy, pandas, matplotlib.pyplot; print(1)",
];

type Call = ReturnType<typeof keepAliveClient>;

async function create(call: Call): Promise<string> {
  const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
  if (res.status !== 201) throw new Error(`create failed: ${JSON.stringify(res.body)}`);
  return res.body.sandbox_id;
}

async function runPython(call: Call, id: string, code: string, expect = "1"): Promise<void> {
  const res = await call<{ logs: { stdout: string; stderr: string } }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
    code,
    language: "python",
    timeout: 120,
  });
  if (res.status !== 200 || res.body.logs.stdout.trim() !== expect) throw new Error(`bad run: ${JSON.stringify(res.body)}`);
}

/**
 * The sandbox's memory cgroup directories (named after the sandbox), under the v1 or v2 hierarchy:
 * more than one while the service moves a new sandbox into its tenant's group.
 */
function cgroupDirs(id: string): string[] {
  const found: string[] = [];
  for (const root of ["/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"]) {
    const stack: [string, number][] = [[root, 0]];
    while (stack.length) {
      const [dir, depth] = stack.pop() as [string, number];
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of entries) {
        if (!e.isDirectory()) continue;
        const full = path.join(dir, e.name);
        if (e.name === id) found.push(full);
        else if (depth < 6) stack.push([full, depth + 1]);
      }
    }
    if (found.length) return found;
  }
  return found;
}

/** Unique memory (private pages, MiB) of every process in the sandbox's cgroup. */
function sandboxUssMb(id: string): number {
  const dirs = cgroupDirs(id);
  if (!dirs.length) throw new Error(`no cgroup for sandbox ${id}`);
  const pids = new Set(dirs.flatMap((d) => fs.readFileSync(path.join(d, "cgroup.procs"), "utf8").split("\n").filter(Boolean)));
  if (!pids.size) throw new Error(`no processes in the cgroup of sandbox ${id}`);
  let kb = 0;
  for (const pid of pids) {
    try {
      const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
      for (const m of rollup.matchAll(/^Private_(?:Clean|Dirty):\s+(\d+) kB/gm)) kb += Number(m[1]);
    } catch {
      // exited meanwhile
    }
  }
  return kb / 1024;
}

export async function benchDataImport(): Promise<string> {
  const server = await startServer({
    env: { AGENTBOX_WARM_POOL: "4", AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000", AGENTBOX_MAX_CONCURRENT_RUNS_PER_KEY: "1000" },
  });
  const call = keepAliveClient(server);
  const tables: string[] = [];
  try {
    const rows: Row[] = [];
    // New sandboxes from the pool, paced like an agent: each gets the pre-imported kernel.
    const claimed: number[] = [];
    await sleep(PACE_MS * 2);
    for (let i = 0; i < RUNS; i++) {
      const id = await create(call);
      claimed.push((await timed(() => runPython(call, id, IMPORT)))[0]);
      await call("DELETE", `/v1/agents/sandboxes/${id}`);
      await sleep(PACE_MS);
    }
    rows.push({ name: "first `import numpy, pandas, matplotlib.pyplot` in a new sandbox (HTTP, end to end)", samples: claimed });

    // The same import where the first run did not import the stack: the plain kernel pays it.
    const plain: number[] = [];
    for (let i = 0; i < Math.min(RUNS, 10); i++) {
      const id = await create(call);
      await runPython(call, id, "print(1)");
      plain.push((await timed(() => runPython(call, id, IMPORT)))[0]);
      await call("DELETE", `/v1/agents/sandboxes/${id}`);
    }
    rows.push({ name: "the same import, later in a sandbox whose first run did not import it (HTTP)", samples: plain });

    // Baseline, same process: a fresh sandboxed python3 doing the import.
    const uid = 299998;
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-bench-"));
    fs.chownSync(workspace, uid, uid);
    const seccomp = buildSeccompFilter();
    // The first runs build matplotlib's font list in this workspace's ~/.cache: not counted.
    for (let i = 0; i < 2; i++) await freshRun(workspace, uid, seccomp, FRESH_IMPORT);
    const fresh: number[] = [];
    for (let i = 0; i < BASELINE_RUNS; i++) fresh.push((await timed(() => freshRun(workspace, uid, seccomp, FRESH_IMPORT)))[0]);
    fs.rmSync(workspace, { recursive: true, force: true });
    rows.push({ name: "baseline, same run: fresh sandboxed `python3` doing the same import (no HTTP)", samples: fresh });
    tables.push(printTable("data stack: first import in a new sandbox vs a fresh sandboxed python3", rows));

    // Memory per sandbox: idle (its first run `print(1)`: the pre-imported kernel released), after
    // `import pandas` in that plain kernel, and with the pre-imported kernel claimed.
    const idle: number[] = [];
    const afterPandas: number[] = [];
    const claimedMem: number[] = [];
    const ids: string[] = [];
    for (let i = 0; i < MEMORY_SANDBOXES; i++) {
      const id = await create(call);
      ids.push(id);
      await runPython(call, id, "print(1)");
    }
    await sleep(500);
    for (const id of ids) idle.push(sandboxUssMb(id));
    for (const id of ids) await runPython(call, id, "import pandas\nprint(1)");
    await sleep(500);
    for (const id of ids) afterPandas.push(sandboxUssMb(id));
    for (const id of ids) await call("DELETE", `/v1/agents/sandboxes/${id}`);
    ids.length = 0;
    for (let i = 0; i < Math.min(MEMORY_SANDBOXES, 4); i++) {
      await sleep(PACE_MS);
      const id = await create(call);
      ids.push(id);
      await runPython(call, id, "import pandas\nprint(1)");
    }
    await sleep(500);
    for (const id of ids) claimedMem.push(sandboxUssMb(id));
    for (const id of ids) await call("DELETE", `/v1/agents/sandboxes/${id}`);
    // A pool sandbox holding its pre-imported kernel (the pool is small: AGENTBOX_WARM_POOL).
    await sleep(PACE_MS * 2);
    const poolId = await create(call);
    const pooled = sandboxUssMb(poolId);
    await call("DELETE", `/v1/agents/sandboxes/${poolId}`);
    const memory = [
      "### data stack: memory per sandbox (unique memory of its processes, median)",
      "",
      "| sandbox | MiB |",
      "| --- | ---: |",
      `| idle, after \`print(1)\` (no pre-imported kernel kept), ${idle.length} sandboxes | ${median(idle).toFixed(1)} |`,
      `| the same sandboxes after \`import pandas\` | ${median(afterPandas).toFixed(1)} |`,
      `| after \`import pandas\` as the first run (pre-imported kernel claimed), ${claimedMem.length} sandboxes | ${median(claimedMem).toFixed(1)} |`,
      `| waiting in the warm pool with its pre-imported kernel, before its first run | ${pooled.toFixed(1)} |`,
    ].join("\n");
    process.stdout.write(`${memory}\n\n`);
    tables.push(memory);
    return await published("data-import", tables.join("\n\n"), machineLine);
  } finally {
    await server.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchDataImport();
}
