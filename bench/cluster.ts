// Benchmark of a cluster on a private PostgreSQL and Redis: forwarding (a sandbox on an executor
// node, its `code/run`, plain and streamed: whole answer and first byte, called directly on the
// executor and through an API-only node that forwards it, in alternating batches; the issue's
// bound: ≤ 0.5 ms added at p50, with the forwarding node's main-thread CPU per forwarded request),
// then the owner's CPU for the same run sent to it directly, signed as a node's and unsigned (its
// own code path for a forwarded request, apart from the relay in between), then what a create, a
// run and a kill cost PostgreSQL and Redis, counted by the engines (bench/cluster-costs.ts), and
// last the throughput of trivial runs over many sandboxes on one node alone and on three nodes of
// this machine (their ratio). Prints the machine's own speed first (a busy machine moves every
// figure), to read the others beside it.
import fs from "node:fs";
import http from "node:http";
import { ChannelAuth } from "../src/cluster/channel-auth.js";
import { forwardedHeaders } from "../src/cluster/hook.js";
import { startCluster } from "../test/helpers/cluster.js";
import { startPostgres, type TestPostgres } from "../test/helpers/postgres.js";
import { client, startServer } from "../test/helpers/server.js";
import { background, costOf, EngineCounters, printCosts } from "./cluster-costs.js";
import { machineLine } from "./code-run.js";
import {
  added,
  directVersusVia,
  type KeepAliveCall,
  keepAliveClient,
  type PostTarget,
  printTable,
  publishTable,
  type Row,
  runThroughput,
  type Series,
  sequentialPosts,
  summarize,
} from "./lib.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 300);
/** Requests of each kind sent (and not counted) before the measured ones: a node serves millions in
 * its life, and the first few hundred run JavaScript V8 has not optimised yet (30–50 % more CPU). */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 500);
/** Creates (and kills) and runs counted for the cost table. */
const COST_CREATES = Number(process.env.BENCH_COST_CREATES ?? 10);
const COST_RUNS = Number(process.env.BENCH_COST_RUNS ?? 100);
/** Sandboxes (one client each) and seconds of the throughput comparison, three nodes against one (0 s: not run). */
const TP_SANDBOXES = Number(process.env.BENCH_TP_SANDBOXES ?? 30);
const TP_SECONDS = Number(process.env.BENCH_TP_SECONDS ?? 5);

const machine = await machineLine();
process.stdout.write(`${machine}\n`);
/**
 * CPU time of a process's main thread so far, ns (schedstat: the scheduler's own count, far finer
 * than the clock ticks of /proc/<pid>/stat). Forwarding runs there; the worker threads (embeddings
 * loading at start, the garbage collector's helpers) are left out. On a busy machine latencies
 * wander with the other processes; the forwarding node's CPU per request much less so.
 */
function mainThreadCpuNs(pid: number): number {
  return Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[0]);
}

/** utime and stime of a process's main thread so far, in clock ticks (/proc/<pid>/task/<pid>/stat). */
function mainThreadTicks(pid: number): [number, number] {
  const stat = fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return [Number(fields[11]), Number(fields[12])];
}

/** `count` sandboxes created through `calls` in turn (a create refused while the nodes' views settle is retried). */
async function createSandboxes(calls: KeepAliveCall[], count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const call = calls[i % calls.length] as KeepAliveCall;
    let res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    for (let tries = 0; res.status === 503 && tries < 20; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    }
    if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
    ids.push(res.body.sandbox_id);
  }
  return ids;
}

/**
 * Throughput of trivial runs over many sandboxes: one node alone (the default: SQLite, no Redis),
 * then three nodes of both roles on PostgreSQL and Redis, each client's runs sent to the three in
 * turn (two in three forwarded), the same sandboxes and clients. On one machine the three share
 * its cores: the ratio is what the cluster's coordination and forwarding cost, not what more
 * machines would add.
 */
async function threeVersusOne(postgres: TestPostgres): Promise<void> {
  const rows: Row[] = [];
  const lone = await startServer();
  try {
    const call = keepAliveClient(lone);
    const ids = await createSandboxes([call], TP_SANDBOXES);
    rows.push(await runThroughput(`one node alone: ${TP_SANDBOXES} sandboxes, ${TP_SANDBOXES} clients`, [call], ids, TP_SECONDS));
  } finally {
    await lone.dispose();
  }
  const three = await startCluster({ leaseMs: 5000, databaseUrl: await postgres.createDatabase("agentbox_three") });
  try {
    const nodes = [await three.node("tp-1", "both"), await three.node("tp-2", "both"), await three.node("tp-3", "both")];
    const calls = nodes.map((n) => keepAliveClient({ port: n.port, key: three.key }));
    const ids = await createSandboxes(calls, TP_SANDBOXES);
    rows.push(
      await runThroughput(`three nodes, runs spread over them: ${TP_SANDBOXES} sandboxes, ${TP_SANDBOXES} clients`, calls, ids, TP_SECONDS),
    );
    const admin = keepAliveClient({ port: nodes[0]?.port as number, key: three.adminKey });
    const listed = await admin<{ nodes: { id: string; live_sandboxes: number }[] }>("GET", "/v1/admin/nodes");
    const placed = listed.body.nodes.map((n) => `${n.id} ${n.live_sandboxes}`).join(", ");
    const table = printTable("code/run throughput: three nodes on this machine vs one", rows);
    const [one, many] = rows.map((r) => summarize(r).throughput) as [number, number];
    const ratio = `three nodes / one node: ${(many / one).toFixed(2)} of the throughput (live sandboxes per node: ${placed})`;
    process.stdout.write(`${ratio}\n`);
    await publishTable("cluster-throughput", `${table}\n\n${ratio}`, machine);
  } finally {
    await three.dispose();
  }
}

// Commits wait for their WAL as on a production server (the test helper's default does not).
const postgres = await startPostgres({ settings: { shared_preload_libraries: "pg_stat_statements", synchronous_commit: "on" } });
const databaseUrl = await postgres.createDatabase("agentbox");
const cluster = await startCluster({ leaseMs: 5000, databaseUrl });
try {
  const api = await cluster.node("bench-api", "api");
  const executor = await cluster.node("bench-executor", "executor");
  // The API node may not have seen the executor join yet (its view is a heartbeat old): 503, retried.
  const create = () => client({ url: api.url, key: cluster.key })<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
  let created = await create();
  for (let tries = 0; created.status === 503 && tries < 20; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    created = await create();
  }
  if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  const path = `/v1/agents/sandboxes/${created.body.sandbox_id}/code/run`;
  const headers = { authorization: `Bearer ${cluster.key}`, "content-type": "application/json" };
  const target = (port: number): PostTarget => ({ port, path, headers, agent: new http.Agent({ keepAlive: true, maxSockets: 1 }) });
  const plain = Buffer.from(JSON.stringify({ language: "python", code: "1 + 1" }));
  const streamed = Buffer.from(JSON.stringify({ language: "python", code: "print(1)", stream: true }));
  const apiPid = api.process.pid as number;
  const executorPid = executor.process.pid as number;
  if (WARMUP > 0) await directVersusVia(target(executor.port), target(api.port), plain, streamed, { n: WARMUP, batch: 50, warmup: 0 });
  const cpuBefore = mainThreadCpuNs(apiPid);
  const ticksBefore = mainThreadTicks(apiPid);
  const s = await directVersusVia(target(executor.port), target(api.port), plain, streamed, {
    n: RUNS,
    batch: 50,
    warmup: 30,
    cpu: () => [mainThreadCpuNs(apiPid), mainThreadCpuNs(executorPid)],
  });
  // Every request the API node got was a forwarded one (warm-up included); its heartbeats are in it too.
  const forwardedCount = 2 * (RUNS + 30);
  const cpuPerRequestUs = (mainThreadCpuNs(apiPid) - cpuBefore) / forwardedCount / 1000;
  const ticks = mainThreadTicks(apiPid).map((t, i) => t - (ticksBefore[i] as number));
  const userShare = (100 * (ticks[0] as number)) / Math.max(1, (ticks[0] as number) + (ticks[1] as number));
  // Per request of each kind, from the batches alone (µs): process 0 the API node, 1 the executor.
  const per = (series: Series[], proc: number) => series.reduce((sum, k) => sum + (s.cpu[k][proc] ?? 0), 0) / (series.length * RUNS) / 1000;
  const direct: Series[] = ["directPlain", "directTtfb"];
  const via: Series[] = ["viaPlain", "viaTtfb"];
  // What this part prints after its table, kept for docs/benchmarks.md too.
  const said: string[] = [];
  const say = (line: string) => {
    process.stdout.write(`${line}\n`);
    said.push(`- ${line}`);
  };
  const forwarding = printTable("code/run: on the executor vs forwarded by an API node", [
    { name: "direct, whole answer", samples: s.directPlain },
    { name: "forwarded, whole answer", samples: s.viaPlain },
    { name: "direct, streamed first byte", samples: s.directTtfb },
    { name: "forwarded, streamed first byte", samples: s.viaTtfb },
  ]);
  say(
    `added by forwarding: p50 ${added(s.directPlain, s.viaPlain, 50).toFixed(3)} ms, p95 ${added(s.directPlain, s.viaPlain, 95).toFixed(3)} ms, ` +
      `p99 ${added(s.directPlain, s.viaPlain, 99).toFixed(3)} ms (streamed first byte p50 ${added(s.directTtfb, s.viaTtfb, 50).toFixed(3)} ms); ` +
      `CPU of the forwarding node's main thread: ${cpuPerRequestUs.toFixed(0)} µs per forwarded request`,
  );
  say(
    `main-thread CPU per request, measured batches only: forwarding node ${per(via, 0).toFixed(0)} µs per forwarded request (whole answers ${per(["viaPlain"], 0).toFixed(0)} µs, streamed ${per(["viaTtfb"], 0).toFixed(0)} µs) ` +
      `(${per(direct, 0).toFixed(0)} µs per direct one: its background), ${userShare.toFixed(0)} % of it user space; ` +
      `owner ${per(via, 1).toFixed(0)} µs per forwarded request, ${per(direct, 1).toFixed(0)} µs per direct one ` +
      `(forwarded adds ${(per(via, 1) - per(direct, 1)).toFixed(0)} µs)`,
  );
  // The owner's code path for a forwarded request, apart from the relay in between: the same run
  // sent to the owner directly by this process, signed as the API node signs what it forwards
  // (node, time, signature, the client's Host), in batches alternating with unsigned ones (which
  // goes first alternates too).
  const channel = new ChannelAuth(cluster.secret, "bench-api");
  const unsigned = target(executor.port);
  const signed = target(executor.port);
  const ownerCpuNs = { unsigned: 0, signed: 0 };
  for (let done = 0; done < RUNS; done += 50) {
    signed.headers = { ...headers, ...forwardedHeaders(channel, "POST", path, `127.0.0.1:${api.port}`) };
    const pair = [["unsigned", unsigned] as const, ["signed", signed] as const];
    for (const [kind, t] of done % 100 === 0 ? pair : pair.reverse()) {
      const before = mainThreadCpuNs(executorPid);
      await sequentialPosts(t, plain, Math.min(50, RUNS - done), 1, []);
      ownerCpuNs[kind] += mainThreadCpuNs(executorPid) - before;
    }
  }
  const ownerUs = (kind: keyof typeof ownerCpuNs) => ownerCpuNs[kind] / RUNS / 1000;
  say(
    `owner's main-thread CPU per direct run sent signed as a node's: ${ownerUs("signed").toFixed(0)} µs, unsigned: ` +
      `${ownerUs("unsigned").toFixed(0)} µs (the signed path adds ${(ownerUs("signed") - ownerUs("unsigned")).toFixed(0)} µs)`,
  );

  await publishTable("cluster", `${forwarding}\n\n${said.join("\n")}`, machine);

  // Costs: every request through the API node, as clients send them.
  const call = client({ url: api.url, key: cluster.key });
  const counters = await EngineCounters.open(databaseUrl, cluster.redis.url);
  try {
    const idle = await background(counters, 5000);
    const ids: string[] = [];
    const rows = [
      await costOf("create (POST /v1/agents/sandboxes)", COST_CREATES, counters, idle, async () => {
        const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
        if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
        ids.push(res.body.sandbox_id);
      }),
      await costOf("code/run, forwarded to the executor", COST_RUNS, counters, idle, async (i) => {
        const res = await call("POST", `/v1/agents/sandboxes/${ids[i % ids.length]}/code/run`, { language: "python", code: "1 + 1" });
        if (res.status !== 200) throw new Error(`run: ${res.status} ${JSON.stringify(res.body)}`);
      }),
      await costOf("kill (DELETE /v1/agents/sandboxes/{id})", ids.length, counters, idle, async (i) => {
        const res = await call("DELETE", `/v1/agents/sandboxes/${ids[i]}`);
        if (res.status !== 200) throw new Error(`kill: ${res.status} ${JSON.stringify(res.body)}`);
      }),
    ];
    await publishTable("cluster-costs", printCosts(rows, idle, 2), machine);
  } finally {
    await counters.close();
  }
} finally {
  await cluster.dispose();
}
try {
  if (TP_SECONDS > 0) await threeVersusOne(postgres);
} finally {
  await postgres.stop();
}
