// Benchmark of pause/resume, snapshots and forks. Pause and resume latency against a plain GET of
// the same sandbox (the API round trip, same run); snapshot and restore of a 100 MB workspace
// (one 100 MB file and 1,000 small ones) against tar on the host over the same files (the copy
// without the sandbox channel or the checks: a baseline, not something the service may do with
// untrusted files); a fork of 10 copies against 10 plain creates at once. Throughput of the
// snapshot and restore rows is MB/s.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startServer } from "../test/helpers/server.js";
import { machineLine } from "./code-run.js";
import { keepAliveClient, printTable, type Row, timed, published } from "./lib.js";

const MB = 1_000_000;
const SIZE_MB = Number(process.env.BENCH_SNAPSHOT_MB ?? 100);
const ROUNDS = Number(process.env.BENCH_SNAPSHOT_ROUNDS ?? 5);
const PAUSES = Number(process.env.BENCH_PAUSE_ROUNDS ?? 30);
const FORK = 10;

export async function benchSnapshots(): Promise<string> {
  const snapDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-bench-snap-"));
  const server = await startServer({
    env: {
      AGENTBOX_WARM_POOL: "4",
      AGENTBOX_START_QUEUE: "16",
      AGENTBOX_SNAPSHOT_DIR: snapDir,
      AGENTBOX_SNAPSHOT_MAX_BYTES: String(4 * SIZE_MB * MB),
    },
  });
  const call = keepAliveClient(server);
  const ok = async <T = Record<string, unknown>>(method: string, route: string, body?: unknown, status = 200) => {
    const res = await call<T>(method, route, body);
    if (res.status !== status) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const tables: string[] = [];
  try {
    const { sandbox_id: id } = await ok<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { timeout: 3600 }, 201);
    const base = `/v1/agents/sandboxes/${id}`;

    // ---- pause / resume ----
    const get: number[] = [];
    const pause: number[] = [];
    const resume: number[] = [];
    await ok("POST", `${base}/code/run`, { code: "x = 1", language: "python" });
    for (let i = 0; i < PAUSES; i++) {
      get.push((await timed(() => ok("GET", base)))[0]);
      pause.push((await timed(() => ok("POST", `${base}/pause`)))[0]);
      resume.push((await timed(() => ok("POST", `${base}/resume`)))[0]);
    }
    tables.push(
      printTable("Pause and resume (python kernel with state, 1 CPU)", [
        { name: "baseline: GET the sandbox", samples: get },
        { name: "pause (freeze every process)", samples: pause },
        { name: "resume (thaw)", samples: resume },
      ]),
    );

    // ---- snapshot / restore of a SIZE_MB workspace ----
    await ok("POST", `${base}/commands/run`, {
      command: `head -c ${SIZE_MB * MB} /dev/urandom > big.bin && mkdir small && for i in $(seq 1000); do head -c 1000 /dev/urandom > small/$i; done`,
      timeout: 120,
    });
    const workspace = path.join(server.workspaceDir, id);
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-bench-tar-"));
    const hostTar: number[] = [];
    const hostUntar: number[] = [];
    const snap: number[] = [];
    const restore: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const archive = path.join(scratch, "w.tar");
      hostTar.push((await timed(async () => execFileSync("tar", ["-cf", archive, "-C", workspace, "."])))[0]);
      const out = path.join(scratch, "out");
      fs.mkdirSync(out);
      hostUntar.push((await timed(async () => execFileSync("tar", ["-xf", archive, "-C", out])))[0]);
      fs.rmSync(out, { recursive: true, force: true });
      fs.rmSync(archive, { force: true });

      const [ms, s] = await timed(() => ok<{ snapshot_id: string }>("POST", `${base}/snapshots`, undefined, 201));
      snap.push(ms);
      const [rms, created] = await timed(() =>
        ok<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { snapshot_id: s.snapshot_id }, 201),
      );
      restore.push(rms);
      await ok("DELETE", `/v1/agents/sandboxes/${created.sandbox_id}`);
      await ok("DELETE", `/v1/agents/snapshots/${s.snapshot_id}`);
    }
    fs.rmSync(scratch, { recursive: true, force: true });
    const mbRow = (name: string, samples: number[]): Row => ({ name, samples, ops: samples.length * SIZE_MB });
    tables.push(
      printTable(`Snapshot and restore of a ${SIZE_MB} MB workspace (throughput: MB/s)`, [
        mbRow("baseline: tar -c on the host", hostTar),
        mbRow("snapshot (tar in the sandbox, channel, fsync, sha256 re-read)", snap),
        mbRow("baseline: tar -x on the host", hostUntar),
        mbRow("create from the snapshot (pool sandbox + restore)", restore),
      ]),
    );

    // ---- fork of FORK copies vs FORK plain creates ----
    await ok("POST", `${base}/commands/run`, { command: "rm -rf big.bin small && head -c 1000000 /dev/urandom > one-mb.bin" });
    const creates: number[] = [];
    const forks: number[] = [];
    for (let i = 0; i < 3; i++) {
      const [cms, made] = await timed(() =>
        Promise.all(Array.from({ length: FORK }, () => ok<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {}, 201))),
      );
      creates.push(cms);
      await Promise.all(made.map((m) => ok("DELETE", `/v1/agents/sandboxes/${m.sandbox_id}`)));
      const [fms, forked] = await timed(() => ok<{ sandboxes: { sandbox_id: string }[] }>("POST", `${base}/fork`, { count: FORK }, 201));
      forks.push(fms);
      await Promise.all(forked.sandboxes.map((m) => ok("DELETE", `/v1/agents/sandboxes/${m.sandbox_id}`)));
      // Let the pool refill between rounds (both rows start from the same pool).
      await new Promise((r) => setTimeout(r, 3000));
    }
    tables.push(
      printTable(`Fork of ${FORK} copies (1 MB workspace; throughput: sandboxes/s)`, [
        { name: `baseline: ${FORK} plain creates at once`, samples: creates, ops: creates.length * FORK },
        { name: `fork count=${FORK}`, samples: forks, ops: forks.length * FORK },
      ]),
    );
    await ok("DELETE", base);
  } finally {
    await server.dispose();
    fs.rmSync(snapDir, { recursive: true, force: true });
  }
  return await published("snapshots", tables.join("\n\n"), machineLine);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchSnapshots();
