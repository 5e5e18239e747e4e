// Every store's contract (test/contract/) run against the SQLite implementations, each test on a
// fresh database in a temporary directory.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after } from "node:test";
import { SqliteWebhookStore } from "../../src/events/store/webhooks.js";
import { SqliteUsageStore } from "../../src/inference/usage.js";
import { SqliteNetworkStore } from "../../src/network/store.js";
import { type Db, openDb } from "../../src/store/db.js";
import { SqliteDeploymentStore } from "../../src/deployments/store.js";
import { SqliteEventStore } from "../../src/events/store/events.js";
import { SqliteFileStore } from "../../src/files/store.js";
import { SqliteAdminKeyStore, SqliteKeyStore } from "../../src/tenancy/store/keys.js";
import { SqliteSandboxStore } from "../../src/sandbox/store/sandboxes.js";
import { SqliteSnapshotStore } from "../../src/sandbox/store/snapshots.js";
import { SqliteTemplateStore } from "../../src/templates/store.js";
import { SqliteTenantStore } from "../../src/tenancy/store/tenants.js";
import { VectorDb } from "../../src/vectors/store.js";
import { describeEventStoreContract, describeWebhookStoreContract } from "../contract/events.js";
import { describeAdminKeyStoreContract, describeKeyStoreContract } from "../contract/keys.js";
import { describeFileStoreContract, describeSandboxStoreContract, describeSnapshotStoreContract } from "../contract/records.js";
import { describeDeploymentStoreContract, describeNetworkStoreContract, describeUsageStoreContract } from "../contract/small-stores.js";
import { describeTemplateStoreContract } from "../contract/templates.js";
import { describeTenantStoreContract } from "../contract/tenants.js";
import { describeVectorCatalogContract } from "../contract/vectors.js";

const opened: { db: Db; dir: string }[] = [];

function freshDb(): Db {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-contract-"));
  const db = openDb(dir);
  opened.push({ db, dir });
  return db;
}

/** Vector catalogs opened by the tests (each on a file of its own, some closed and reopened). */
const catalogs: VectorDb[] = [];

/** A new vectors database in a temporary directory, or, given its file, the one closed before reopened. */
function vectorCatalog(file?: string): VectorDb {
  const dir = file === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-contract-")) : path.dirname(file);
  const catalog = new VectorDb(dir);
  catalogs.push(catalog);
  return catalog;
}

after(async () => {
  for (const { db, dir } of opened) {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  // Closing twice is harmless: the tests close some themselves.
  await Promise.all(catalogs.map((c) => c.close()));
  for (const c of catalogs) fs.rmSync(path.dirname(c.file), { recursive: true, force: true });
});

describeKeyStoreContract("sqlite", async () => new SqliteKeyStore(freshDb()));
describeAdminKeyStoreContract("sqlite", async () => new SqliteAdminKeyStore(freshDb()));
describeTenantStoreContract("sqlite", async () => new SqliteTenantStore(freshDb()));
describeEventStoreContract("sqlite", 5, async () => {
  const db = freshDb();
  const store = new SqliteEventStore(db, 5);
  return {
    store,
    // Events are pruned by the sandbox record's end (the sandboxes table of the core migrations).
    sandboxEnded: async (id, endedAt) => {
      db.prepare(
        `INSERT INTO sandboxes (id, tenant_id, template, status, metadata, env_vars, cpu_count, memory_mb, host_uid, started_at, timeout_at, ended_at)
         VALUES (?, 't1', 'x', 'terminated', '{}', '{}', 1, 1, 1, ?, ?, ?)`,
      ).run(id, endedAt, endedAt, endedAt);
    },
  };
});
describeWebhookStoreContract("sqlite", async () => new SqliteWebhookStore(freshDb()));
describeNetworkStoreContract("sqlite", async () => new SqliteNetworkStore(freshDb()));
describeDeploymentStoreContract("sqlite", async () => new SqliteDeploymentStore(freshDb()));
describeUsageStoreContract("sqlite", async () => new SqliteUsageStore(freshDb()));
describeSandboxStoreContract("sqlite", async () => new SqliteSandboxStore(freshDb(), "n1"));
describeSnapshotStoreContract("sqlite", async () => new SqliteSnapshotStore(freshDb()));
describeFileStoreContract("sqlite", async () => new SqliteFileStore(freshDb()));
describeTemplateStoreContract("sqlite", async () => new SqliteTemplateStore(freshDb()));

describeVectorCatalogContract("sqlite", async (closed) => vectorCatalog((closed as VectorDb | undefined)?.file));
