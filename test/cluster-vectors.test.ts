// Vector indexes in a cluster (PostgreSQL, a private Redis, an API node and two executors): each
// index is owned by one executor, chosen by rendezvous hashing of its id over the executors up.
// Writes and searches of one index sent through every node give the same answers, and only its
// owner ever holds it in memory, loaded once however many nodes the writes came through (each
// node's own /metrics say what it holds). With the owner killed (-9), the index's searches are
// answered at once by the other nodes from the records, with the same results; the surviving
// executor owns and loads it, and the API node drops the copy it made meanwhile.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { rendezvousOwner } from "../src/cluster/vector-owners.js";
import { startCluster, type TestCluster, untilExecutorsUp } from "./helpers/cluster.js";
import { until } from "./helpers/leftovers.js";
import { startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { client, type TestServer } from "./helpers/server.js";

const LEASE_MS = 3000;
/** Seconds a node keeps a copy of an index another node owns. */
const RELEASE_S = 2;
const EXECUTORS = ["exec-1", "exec-2"];

let postgres: TestPostgres;
let cluster: TestCluster;
let api: TestServer;
let executors: Map<string, TestServer>;
let indexId: string;
/** The index's owner and the other executor. */
let owner: TestServer;
let other: TestServer;

type Call = ReturnType<typeof client>;
type Hit = { id: string; score: number; metadata?: Record<string, unknown>; values?: number[] };
const call = (node: TestServer): Call => client({ url: node.url, key: cluster.key });

before(async () => {
  postgres = await startPostgres();
  cluster = await startCluster({ leaseMs: LEASE_MS, databaseUrl: await postgres.createDatabase("agentbox") });
  const env = { AGENTBOX_WARM_POOL: "0", AGENTBOX_VECTOR_RELEASE_S: String(RELEASE_S) };
  // The API node first: it makes the database's tables.
  api = await cluster.node("api", "api", env);
  const started = await Promise.allSettled(EXECUTORS.map((id) => cluster.node(id, "executor", env)));
  executors = new Map(
    started.map((s, i) => {
      if (s.status === "rejected") throw s.reason;
      // By id (cluster.nodes is in the order the nodes finished starting).
      return [EXECUTORS[i] as string, s.value];
    }),
  );
  // Every node sees both executors (asking renews a node's view), so they agree on the owners.
  for (const node of cluster.nodes) await untilExecutorsUp(node, cluster.adminKey, 2);
});

after(async () => {
  await cluster?.dispose();
  await postgres?.stop();
});

/** What a node holds of the vector indexes, from its own metrics. */
async function holding(node: TestServer): Promise<{ loaded: number; loads: number }> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  const loaded = /^agentbox_vector_indexes_loaded (\d+)$/m.exec(text);
  const loads = /^agentbox_vector_index_loads_total (\d+)$/m.exec(text);
  assert.ok(loaded && loads, "the vector holding metrics are in the node's /metrics");
  return { loaded: Number(loaded[1]), loads: Number(loads[1]) };
}

const QUERIES = [
  { vector: [1, 0, 0, 1], top_k: 5 },
  { vector: [0, 1, 0.5, 1], top_k: 10, filter: { g: 1 } },
  { vector: [-1, 0.2, 1, 0], top_k: 3, include_values: true },
];

/** The index's answers to QUERIES through a node (ids, rounded scores, metadata, values). */
async function answers(c: Call, ref = indexId): Promise<unknown[]> {
  return Promise.all(
    QUERIES.map(async (q) => {
      const res = await c<{ hits: Hit[] }>("POST", `/v1/vectors/${ref}/search`, q);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.hits.map((h) => [h.id, Math.round(h.score * 1e5), h.metadata, h.values?.map((v) => Math.round(v * 1e5))]);
    }),
  );
}

async function ok(res: Promise<{ status: number; body: unknown }>): Promise<void> {
  const r = await res;
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

test("writes and searches of one index through every node agree, and only its owner executor holds it, loaded once", async () => {
  const made = await call(api)<{ id: string; status: string; vector_count: number }>("POST", "/v1/vectors/indexes", {
    name: "docs",
    dimension: 4,
    metric: "cosine",
  });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  assert.equal(made.body.status, "ready");
  assert.equal(made.body.vector_count, 0);
  indexId = made.body.id;
  const ownerId = rendezvousOwner(indexId, EXECUTORS) as string;
  owner = executors.get(ownerId) as TestServer;
  other = executors.get(EXECUTORS.find((id) => id !== ownerId) as string) as TestServer;
  const [viaApi, viaOwner, viaOther] = [api, owner, other].map(call) as [Call, Call, Call];

  // Writes through each node in turn, by id and by name.
  const vectors = Array.from({ length: 60 }, (_, i) => ({
    id: `v${i}`,
    embedding: [Math.cos(i), Math.sin(i), (i % 7) / 7, 1],
    metadata: { g: i % 3 },
  }));
  await ok(viaApi("POST", `/v1/vectors/${indexId}/batch`, { vectors }));
  await ok(viaOther("POST", "/v1/vectors/docs/upsert", { vectors: [{ id: "v1", embedding: [1, 0, 0, 1], metadata: { g: 1 } }] }));
  await ok(viaOwner("POST", `/v1/vectors/${indexId}/delete`, { vector_ids: ["v0", "v7"] }));
  await ok(viaApi("PUT", `/v1/vectors/docs/v2`, { metadata: { g: 9 } }));
  await ok(
    viaOther("POST", `/v1/vectors/${indexId}/upsert`, { vectors: [{ id: "fromOther", embedding: [1, 0.01, 0, 1], metadata: { g: 1 } }] }),
  );

  const first = await answers(viaApi);
  assert.equal((first[0] as unknown[]).length, 5);
  assert.ok(JSON.stringify(first[0]).includes("fromOther"), JSON.stringify(first[0]));
  for (const c of [viaOwner, viaOther]) assert.deepEqual(await answers(c), first);
  assert.deepEqual(await answers(viaOther, "docs"), first);
  // Reads agree too, each write seen by every node.
  for (const c of [viaApi, viaOwner, viaOther]) {
    const got = await c<{ id: string; vector_count: number }>("GET", "/v1/vectors/indexes/docs");
    assert.deepEqual([got.status, got.body.id, got.body.vector_count], [200, indexId, 59]);
    const fetched = await c<{ vectors: { id: string; metadata: Record<string, unknown> }[] }>(
      "GET",
      `/v1/vectors/${indexId}/fetch?vector_ids=v1,v2,v0,fromOther`,
    );
    assert.deepEqual(fetched.body.vectors.map((v) => [v.id, v.metadata]).sort(), [
      ["fromOther", { g: 1 }],
      ["v1", { g: 1 }],
      ["v2", { g: 9 }],
    ]);
  }

  // A list through the API node, which never holds it, shows it ready with the count it last read.
  const listed = await viaApi<{ indexes: { id: string; status: string; vector_count: number }[] }>("GET", "/v1/vectors/indexes");
  assert.deepEqual(
    listed.body.indexes.map((i) => [i.id, i.status, i.vector_count]),
    [[indexId, "ready", 59]],
  );

  // The owner holds it, loaded from its records once (written through three nodes, never reloaded);
  // the API node and the other executor never loaded it.
  const held = { owner: await holding(owner), other: await holding(other), api: await holding(api) };
  assert.deepEqual(
    held,
    { owner: { loaded: 1, loads: 1 }, other: { loaded: 0, loads: 0 }, api: { loaded: 0, loads: 0 } },
    `${ownerId} owns ${indexId}`,
  );
});

test("the owner killed: the index is answered at once through the other nodes with the same results, then owned and held by the other executor", async () => {
  assert.ok(indexId, "the first test made the index");
  const before = await answers(call(api));
  await owner.crash();
  // At once, while the dead owner still has its lease: answered from the records, the same.
  assert.deepEqual(await answers(call(api)), before);
  assert.deepEqual(await answers(call(other)), before);
  // The surviving executor owns it once the owner is found lost, and holds it (loaded again if the
  // copy it made while answering for the dead owner was dropped meanwhile).
  const ownerId = rendezvousOwner(indexId, EXECUTORS) as string;
  await until("the owner found lost", 30_000, async () => {
    const res = await client({ url: other.url, key: cluster.adminKey })<{ nodes: { id: string; state: string }[] }>(
      "GET",
      "/v1/admin/nodes",
    );
    return res.body.nodes.some((n) => n.id === ownerId && n.state === "lost") ? true : undefined;
  });
  await until("the surviving executor holds the index", 30_000, async () => ((await holding(other)).loaded === 1 ? true : undefined));
  // Writes and searches go on through both nodes, with the same answers.
  await ok(
    call(api)("POST", `/v1/vectors/${indexId}/upsert`, { vectors: [{ id: "afterLoss", embedding: [1, 0, 0.02, 1], metadata: { g: 1 } }] }),
  );
  const after = await answers(call(api));
  assert.ok(JSON.stringify(after[0]).includes("afterLoss"), JSON.stringify(after[0]));
  assert.deepEqual(await answers(call(other)), after);
  // The copy the API node made while the owner could not be reached is dropped after the grace.
  await until("the API node drops its copy", 30_000, async () => ((await holding(api)).loaded === 0 ? true : undefined));
  // The new owner keeps it past the grace.
  await new Promise((r) => setTimeout(r, (RELEASE_S + 2) * 1000));
  assert.equal((await holding(other)).loaded, 1);
  assert.deepEqual(await answers(call(api)), after);
});
