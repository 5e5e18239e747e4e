// A short run of the load benchmark (bench/load.ts): 30 clients for 10 s over 3 tenants, mixing
// create, code/run in every language, files, commands, list and kill. No 5xx but the documented
// 503 at_capacity, no other error, every output right, and afterwards every sandbox a client was
// given is listed exactly once with the right status; the service is healthy and leaves nothing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { checkConsistency, createKeys, killAll, printReport, runLoad } from "../bench/load.js";
import { eventually, mountsUnder } from "./helpers/leftovers.js";
import { startServer, type TestServer } from "./helpers/server.js";

const CLIENTS = Number(process.env.LOAD_TEST_CLIENTS ?? 30);
const SECONDS = Number(process.env.LOAD_TEST_SECONDS ?? 10);
/** The pool grows with demand during the load, up to this; afterwards only it stays mounted. */
const POOL_MAX = 8;

let server: TestServer;
let keys: string[];

before(async () => {
  server = await startServer({
    env: { AGENTBOX_WARM_POOL: "4", AGENTBOX_WARM_POOL_MAX: String(POOL_MAX), AGENTBOX_RATE_LIMIT_PER_MINUTE: "1000000" },
  });
  keys = await createKeys(server.dataDir, 3);
});

after(async () => {
  await server?.dispose();
});

test(`${CLIENTS} clients for ${SECONDS} s: no 5xx but 503 at_capacity, nothing lost or duplicated`, {
  timeout: (SECONDS + 150) * 1000,
}, async () => {
  // At least SECONDS of load, and on until the clients have been given CLIENTS sandboxes in all
  // (a busy host starts sandboxes more slowly; refusals then are answers, not failures), at most 60 s more.
  const started = Date.now();
  const enough = new AbortController();
  let created = 0;
  const onResponse = (op: string, status: number) => {
    if (op === "create" && status === 201) created += 1;
  };
  const stopAtTime = setInterval(() => {
    if (created >= CLIENTS && Date.now() - started >= SECONDS * 1000) enough.abort();
  }, 200);
  const report = await runLoad({
    url: server.url,
    keys,
    clients: CLIENTS,
    durationMs: (SECONDS + 60) * 1000,
    requestTimeoutMs: 30_000,
    signal: enough.signal,
    onResponse,
  }).finally(() => clearInterval(stopAtTime));
  printReport(`load test: ${CLIENTS} clients, ${SECONDS} s`, report);

  assert.deepEqual(report.failures, [], "no unexpected status, wrong output or hung request");
  for (const status of report.statuses.keys()) {
    assert.ok(/^(200|201|429 \w+|503 at_capacity)$/.test(status), `unexpected status ${status}`);
  }
  assert.ok(report.created.size >= CLIENTS, `every client got a sandbox (${report.created.size} created)`);
  assert.ok((report.latencies.get("run python")?.length ?? 0) > 0 && (report.latencies.get("run typescript")?.length ?? 0) > 0);
  assert.ok(report.killed.size > 0, "some sandboxes were killed under load");
  assert.deepEqual(report.duplicateCreates, [], "no sandbox id handed out twice");
  assert.equal(report.unknownCreates, 0);

  const check = await checkConsistency(server.url, keys, report);
  assert.deepEqual(check, { lost: [], duplicated: [], unexpected: [], wrongStatus: [] });

  const health = await fetch(`${server.url}/health`);
  assert.equal(health.status, 200);
  const live = ((await health.json()) as { live_sandboxes: number }).live_sandboxes;
  assert.equal(live, report.created.size - report.killed.size, "live count matches what the clients hold");

  await killAll(server.url, report);
  const after = (await (await fetch(`${server.url}/health`)).json()) as { live_sandboxes: number };
  assert.equal(after.live_sandboxes, 0);
  // Only the warm pool remains mounted (the killed sandboxes' teardowns run a few at a time).
  assert.ok(
    await eventually(() => mountsUnder(server.workspaceDir).length <= POOL_MAX, 15_000),
    `mounts: ${mountsUnder(server.workspaceDir).length}`,
  );
});
