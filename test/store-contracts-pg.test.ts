// Every store's contract (test/contract/) run against the PostgreSQL implementations, on a private
// PostgreSQL 15 started once for this file; each test gets a fresh schema of its own.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { PgDeploymentStore } from "../src/deployments/store-pg.js";
import { PgEventStore } from "../src/events/store/events-pg.js";
import { PgWebhookStore } from "../src/events/store/webhooks-pg.js";
import { PgFileStore } from "../src/files/store-pg.js";
import { PgUsageStore } from "../src/inference/usage-pg.js";
import { PgNetworkStore } from "../src/network/store-pg.js";
import { PgSandboxStore } from "../src/sandbox/store/sandboxes-pg.js";
import { PgSnapshotStore } from "../src/sandbox/store/snapshots-pg.js";
import { appliedPgVersions, migratePg, openPgPool, type PgMigration, type PgPool } from "../src/store/pg.js";
import { PgAdminKeyStore, PgKeyStore } from "../src/tenancy/store/keys-pg.js";
import { PgTenantStore } from "../src/tenancy/store/tenants-pg.js";
import { PgTemplateStore } from "../src/templates/store-pg.js";
import type { VectorCatalog } from "../src/vectors/store.js";
import { PgVectorCatalog } from "../src/vectors/store-pg.js";
import { describeEventStoreContract, describeWebhookStoreContract } from "./contract/events.js";
import { describeAdminKeyStoreContract, describeKeyStoreContract } from "./contract/keys.js";
import { describeFileStoreContract, describeSandboxStoreContract, describeSnapshotStoreContract } from "./contract/records.js";
import { describeDeploymentStoreContract, describeNetworkStoreContract, describeUsageStoreContract } from "./contract/small-stores.js";
import { describeTemplateStoreContract } from "./contract/templates.js";
import { describeTenantStoreContract } from "./contract/tenants.js";
import { describeVectorCatalogContract } from "./contract/vectors.js";
import { startPostgres, type TestPostgres } from "./helpers/postgres.js";

let server: TestPostgres;
const pools: PgPool[] = [];

before(async () => {
  server = await startPostgres();
});

after(async () => {
  // The server first: a pool still holding a connection cannot keep it running.
  await server?.stop();
  await Promise.all(pools.map((p) => p.end().catch(() => {})));
});

/** A pool whose connections see a new, empty schema: a fresh database for one test. */
async function freshPool(): Promise<PgPool> {
  const pool = openPgPool(await server.freshSchema(), 4);
  pools.push(pool);
  return pool;
}

describeKeyStoreContract("postgres", async () => PgKeyStore.open(await freshPool()));
describeAdminKeyStoreContract("postgres", async () => PgAdminKeyStore.open(await freshPool()));
describeTenantStoreContract("postgres", async () => PgTenantStore.open(await freshPool()));
describeEventStoreContract("postgres", 5, async () => {
  const pool = await freshPool();
  // Events are pruned by the sandbox record's end: the sandboxes table first, as the service opens them.
  const sandboxes = await PgSandboxStore.open(pool, "n1");
  const store = await PgEventStore.open(pool, 5);
  return {
    store,
    sandboxEnded: async (id, endedAt) =>
      sandboxes.insert({
        id,
        tenantId: "t1",
        template: "x",
        status: "terminated",
        metadata: {},
        envVars: {},
        cpuCount: 1,
        memoryMb: 1,
        hostUid: 1,
        startedAt: endedAt,
        timeoutAt: endedAt,
        endedAt,
        nodeId: "n1",
      }),
  };
});
describeWebhookStoreContract("postgres", async () => PgWebhookStore.open(await freshPool()));
describeNetworkStoreContract("postgres", async () => PgNetworkStore.open(await freshPool()));
describeDeploymentStoreContract("postgres", async () => PgDeploymentStore.open(await freshPool()));
describeUsageStoreContract("postgres", async () => PgUsageStore.open(await freshPool()));
describeSandboxStoreContract("postgres", async () => PgSandboxStore.open(await freshPool(), "n1"));
describeSnapshotStoreContract("postgres", async () => PgSnapshotStore.open(await freshPool()));
describeFileStoreContract("postgres", async () => PgFileStore.open(await freshPool()));
describeTemplateStoreContract("postgres", async () => PgTemplateStore.open(await freshPool(), "n1"));

/** Each vector catalog's database, to open it again once closed (as another node or a restart would). */
const catalogUrls = new Map<VectorCatalog, string>();
describeVectorCatalogContract("postgres", async (closed) => {
  const url = closed === undefined ? await server.freshSchema() : (catalogUrls.get(closed) as string);
  const pool = openPgPool(url, 4);
  pools.push(pool);
  const catalog = await PgVectorCatalog.open(pool);
  catalogUrls.set(catalog, url);
  return catalog;
});

test("templates: a node's unfinished builds are its own (another node's are running there)", async () => {
  const pool = await freshPool();
  const here = await PgTemplateStore.open(pool, "n1");
  const there = await PgTemplateStore.open(pool, "n2");
  const build = (id: string) => ({
    id,
    templateId: "tpl_a",
    tenantId: "t1",
    status: "running" as const,
    phase: "building" as const,
    progress: 50,
    error: null,
    startedAt: null,
    completedAt: null,
    createdAt: "2026-01-01T00:00:00.000Z",
    // Recorded as the inserting store's node.
    nodeId: null,
  });
  await here.insertBuild(build("bld_here"));
  await there.insertBuild(build("bld_there"));
  assert.deepEqual(
    (await here.unfinishedBuilds()).map((b) => b.id),
    ["bld_here"],
  );
  assert.deepEqual(
    (await there.unfinishedBuilds()).map((b) => b.id),
    ["bld_there"],
  );
  // Every node reads every build.
  assert.equal((await here.build("bld_there"))?.id, "bld_there");
});

test("migrations: nodes starting at once apply each version once, in order; a second run changes nothing", async () => {
  const url = await server.freshSchema();
  const nodes = Array.from({ length: 5 }, () => openPgPool(url, 2));
  pools.push(...nodes);
  // Neither step could run twice (no IF NOT EXISTS; the second needs the first).
  const steps: PgMigration[] = [
    { area: "demo", version: 2, sql: "ALTER TABLE demo ADD COLUMN b INTEGER" },
    { area: "demo", version: 1, sql: "CREATE TABLE demo (a INTEGER)" },
  ];
  await Promise.all(nodes.map((pool) => migratePg(pool, steps)));
  assert.deepEqual(await appliedPgVersions(nodes[0] as PgPool, "demo"), [1, 2]);
  await migratePg(nodes[0] as PgPool, steps);
  assert.deepEqual(await appliedPgVersions(nodes[0] as PgPool, "demo"), [1, 2]);
  // A failing step is rolled back with its record: the next start tries it again.
  const failing: PgMigration = { area: "demo", version: 3, sql: "ALTER TABLE demo ADD COLUMN a INTEGER" };
  await assert.rejects(migratePg(nodes[1] as PgPool, [...steps, failing]));
  assert.deepEqual(await appliedPgVersions(nodes[1] as PgPool, "demo"), [1, 2]);
});
