// Databases made before every area had versioned migrations open with the one migration runner:
// the schema the earlier code left (test/fixtures/db/, dumped from sqlite_master) gets a row in each
// table, the stores open it, and every row reads back intact; the result has the same tables and
// columns as a new database, and opening it again changes nothing.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { SqliteWebhookStore } from "../../src/events/store/webhooks.js";
import { SqliteUsageStore } from "../../src/inference/usage.js";
import { SqliteNetworkStore } from "../../src/network/store.js";
import { appliedVersions, type Db, openDb } from "../../src/store/db.js";
import { SqliteDeploymentStore } from "../../src/deployments/store.js";
import { SqliteEventStore } from "../../src/events/store/events.js";
import { SqliteFileStore } from "../../src/files/store.js";
import { hashKey, SqliteAdminKeyStore, SqliteKeyStore } from "../../src/tenancy/store/keys.js";
import { SqliteSandboxStore } from "../../src/sandbox/store/sandboxes.js";
import { SqliteSnapshotStore } from "../../src/sandbox/store/snapshots.js";
import { SqliteTenantStore } from "../../src/tenancy/store/tenants.js";
import { VectorDb } from "../../src/vectors/store.js";

const FIXTURES = path.join(import.meta.dirname, "..", "fixtures", "db");
const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-upgrade-"));
  dirs.push(dir);
  return dir;
}

/** A database file with the old schema and one row in each table, written with plain SQL. */
function oldMainDb(dir: string): void {
  const db = new Database(path.join(dir, "agentbox.db"));
  db.exec(fs.readFileSync(path.join(FIXTURES, "main-before-areas.sql"), "utf8"));
  db.exec(`
    INSERT INTO api_keys VALUES ('k1', 't1', 'old key', 'abx_oldkey', '${hashKey("old-key")}', '2025-01-01T00:00:00.000Z', NULL, 60, 2, '2025-02-01T00:00:00.000Z');
    INSERT INTO admin_keys VALUES ('a1', 'abxadm_old', '${hashKey("old-admin")}', '2025-01-01T00:00:00.000Z');
    INSERT INTO sandboxes VALUES ('s1', 't1', 'python-base-v1', 'terminated', '{"team":"a"}', '{"X":"1"}', 1, 512, 2001,
      '2025-01-01T00:00:00.000Z', '2025-01-01T00:05:00.000Z', '2025-01-01T00:01:00.000Z');
    INSERT INTO usage VALUES ('k1', 'm', 10, 5, '2025-01-01T00:00:00.000Z');
    INSERT INTO tenants VALUES ('t1', 3, NULL, 1024, NULL, 50, '2025-01-01T00:00:00.000Z', '2025-01-02T00:00:00.000Z', 2, NULL, 9);
    INSERT INTO snapshots VALUES ('snap1', 't1', 's1', 'manual', '2025-01-01T00:00:30.000Z', 4096, 3, 'abc',
      '{"template":"python-base-v1","envVars":{},"metadata":{}}');
    INSERT INTO sandbox_on_timeout VALUES ('s1', 'snapshot');
    INSERT INTO stored_files (id, tenant_id, filename, purpose, bytes, sha256, storage_key, created_at, expires_at)
      VALUES ('file-1', 't1', 'a.txt', 'assistants', 12, 'def', 'key/1', 1735689600000, NULL);
    INSERT INTO deployments VALUES ('dep1', 't1', 'llm', 'm.gguf', 'cpu', NULL, 0, 1, 2, 'running', NULL, '2025-01-01T00:00:00.000Z');
    INSERT INTO sandbox_events (sandbox_id, tenant_id, type, at, reason, detail)
      VALUES ('s1', 't1', 'ended', '2025-01-01T00:01:00.000Z', 'killed', '{"by":"operator"}');
    INSERT INTO sandbox_network VALUES ('s1', 't1', '{"allow_out":["a.example"]}');
    INSERT INTO webhooks VALUES ('wh1', 't1', 'https://a.example/', '["ended"]', 'ssssssssssssssss', '2025-01-01T00:00:00.000Z');
    INSERT INTO webhook_deliveries VALUES ('d1', 'wh1', 't1', 'ended', '{}', 'pending', 0, 1000, 1000, '[]');
  `);
  db.close();
}

/** Opens the main database the way the service does: the core steps, then each area's store. */
function openAll(dir: string) {
  const db = openDb(dir);
  return {
    db,
    keys: new SqliteKeyStore(db),
    admin: new SqliteAdminKeyStore(db),
    tenants: new SqliteTenantStore(db),
    sandboxes: new SqliteSandboxStore(db, "n1"),
    snapshots: new SqliteSnapshotStore(db),
    files: new SqliteFileStore(db),
    deployments: new SqliteDeploymentStore(db),
    events: new SqliteEventStore(db, 100),
    network: new SqliteNetworkStore(db),
    webhooks: new SqliteWebhookStore(db),
    usage: new SqliteUsageStore(db),
  };
}

/** Every table's columns (name and type), to compare two databases' schemas. */
function columns(db: Db): Record<string, string[]> {
  const tables = db
    .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .all();
  return Object.fromEntries(
    tables.map(({ name }) => [
      name,
      (db.prepare(`PRAGMA table_info(${name})`).all() as { name: string; type: string }[]).map((c) => `${c.name} ${c.type}`).sort(),
    ]),
  );
}

const migrationRows = (db: Db) => db.prepare("SELECT area, version FROM schema_migrations ORDER BY area, version").all();

test("a main database from before versioned areas opens with every row intact", async () => {
  const dir = tempDir();
  oldMainDb(dir);
  const s = openAll(dir);
  try {
    assert.equal(s.db.pragma("user_version", { simple: true }), 0, "the old counter is taken over");
    assert.deepEqual(appliedVersions(s.db, "core"), [1, 2, 3]);
    for (const area of ["events", "files", "network", "snapshots", "webhooks"]) assert.deepEqual(appliedVersions(s.db, area), [1], area);
    assert.deepEqual(appliedVersions(s.db, "deployments"), [1, 2], "its node column added");
    assert.deepEqual(appliedVersions(s.db, "tenants"), [1, 2]);

    assert.deepEqual(await s.keys.findActiveByHash(hashKey("old-key")), {
      id: "k1",
      tenantId: "t1",
      name: "old key",
      prefix: "abx_oldkey",
      createdAt: "2025-01-01T00:00:00.000Z",
      revokedAt: null,
      rateLimitPerMinute: 60,
      maxConcurrentRuns: 2,
      lastUsedAt: "2025-02-01T00:00:00.000Z",
    });
    assert.deepEqual(await s.admin.hashes(), [hashKey("old-admin")]);
    assert.deepEqual(await s.tenants.get("t1"), {
      id: "t1",
      quotas: {
        maxSandboxes: 3,
        maxConcurrentRuns: null,
        memoryMb: 1024,
        maxProcesses: null,
        storageMb: 50,
        maxVectorIndexes: 2,
        maxVectors: null,
        vectorStorageMb: 9,
      },
      suspendedAt: null,
      createdAt: "2025-01-01T00:00:00.000Z",
      updatedAt: "2025-01-02T00:00:00.000Z",
    });
    const sandbox = await s.sandboxes.get("s1");
    assert.deepEqual(
      sandbox && {
        metadata: sandbox.metadata,
        envVars: sandbox.envVars,
        status: sandbox.status,
        uid: sandbox.hostUid,
        node: sandbox.nodeId,
      },
      {
        node: "n1",
        metadata: { team: "a" },
        envVars: { X: "1" },
        status: "terminated",
        uid: 2001,
      },
    );
    assert.deepEqual(await s.usage.summary("k1", ""), [{ model: "m", prompt_tokens: 10, completion_tokens: 5, requests: 1 }]);
    assert.equal((await s.snapshots.get("snap1"))?.sizeBytes, 4096);
    assert.equal(await s.snapshots.onTimeout("s1"), "snapshot");
    assert.equal((await s.files.get("t1", "file-1"))?.storageKey, "key/1");
    assert.deepEqual(
      (await s.deployments.all()).map((d) => [d.id, d.name, d.status]),
      [["dep1", "llm", "running"]],
    );
    assert.deepEqual(await s.events.list("t1", "s1"), [
      { type: "ended", at: "2025-01-01T00:01:00.000Z", reason: "killed", detail: { by: "operator" } },
    ]);
    assert.deepEqual(await s.network.all(), [{ sandboxId: "s1", tenantId: "t1", policy: { allow_out: ["a.example"] } }]);
    assert.equal((await s.webhooks.hook("t1", "wh1"))?.url, "https://a.example/");
    assert.equal(await s.webhooks.pendingCount("wh1"), 1);

    // New rows go in next to the old ones.
    const [old] = await s.deployments.all();
    assert.ok(old);
    assert.equal(await s.deployments.insert({ ...old, id: "dep2", name: "llm2" }), true);

    // Same tables and columns as a database made new.
    const fresh = openAll(tempDir());
    try {
      assert.deepEqual(columns(s.db), columns(fresh.db));
      assert.deepEqual(migrationRows(s.db), migrationRows(fresh.db));
    } finally {
      fresh.db.close();
    }
  } finally {
    s.db.close();
  }

  // A second open runs nothing again.
  const again = openAll(dir);
  try {
    assert.deepEqual(appliedVersions(again.db, "core"), [1, 2, 3]);
    assert.equal((await again.deployments.all()).length, 2);
  } finally {
    again.db.close();
  }
});

test("a vectors database from before versioned migrations opens with its indexes and records", async () => {
  const dir = tempDir();
  const raw = new Database(path.join(dir, "vectors.db"));
  raw.exec(fs.readFileSync(path.join(FIXTURES, "vectors-before-areas.sql"), "utf8"));
  const embedding = Buffer.from(new Float32Array([1, 2, 3]).buffer);
  raw
    .prepare(
      `INSERT INTO vector_indexes (id, tenant_id, name, dimension, metric, vector_type, metadata, delete_protection, created_at,
         updated_at, next_label, seq, vector_count, bytes, target_recall)
       VALUES ('ix1', 't1', 'docs', 3, 'cosine', 'dense', '{}', 0, '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', 1, 1, 1, 17, 0.9)`,
    )
    .run();
  raw
    .prepare("INSERT INTO vectors VALUES ('ix1', 'v1', 0, ?, '{\"a\":1}', 0, '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', 1)")
    .run(embedding);
  raw.close();

  const db = new VectorDb(dir);
  try {
    assert.deepEqual(appliedVersions(db.db, "vectors"), [1, 2, 3, 4]);
    const index = db.indexById("t1", "ix1");
    assert.equal(index?.name, "docs");
    assert.equal(index?.target_recall, 0.9);
    assert.equal(db.count("ix1"), 1);
    assert.equal(await db.byteCount("ix1"), 17);
    assert.deepEqual(db.usageOf("t1"), { indexes: 1, vectors: 1, bytes: 17 });
    const record = await db.get("ix1", "v1");
    assert.deepEqual(record && [...new Float32Array(record.embedding.buffer, record.embedding.byteOffset, 3)], [1, 2, 3]);
    assert.equal(record?.metadata, '{"a":1}');
  } finally {
    db.close();
  }
});

test("a vectors database from before the count, bytes and recall columns gets them, filled in", async () => {
  const dir = tempDir();
  const raw = new Database(path.join(dir, "vectors.db"));
  // The first catalog: no vector_count, bytes or target_recall yet.
  raw.exec(
    fs
      .readFileSync(path.join(FIXTURES, "vectors-before-areas.sql"), "utf8")
      .replace("  vector_count INTEGER NOT NULL DEFAULT 0,\n  bytes INTEGER NOT NULL DEFAULT 0, target_recall REAL,\n", ""),
  );
  assert.ok(!(raw.prepare("PRAGMA table_info(vector_indexes)").all() as { name: string }[]).some((c) => c.name === "bytes"));
  raw
    .prepare(
      `INSERT INTO vector_indexes (id, tenant_id, name, dimension, metric, vector_type, metadata, delete_protection, created_at, updated_at, next_label, seq)
       VALUES ('ix1', 't1', 'docs', 2, 'cosine', 'dense', '{}', 0, '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', 2, 2)`,
    )
    .run();
  const put = raw.prepare(
    "INSERT INTO vectors VALUES ('ix1', ?, ?, ?, '{}', 0, '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', ?)",
  );
  put.run("a", 0, Buffer.alloc(8), 1);
  put.run("bb", 1, Buffer.alloc(8), 2);
  raw.close();

  const db = new VectorDb(dir);
  try {
    assert.equal(db.count("ix1"), 2, "counted once");
    // Each record: 8 bytes of embedding, 2 of metadata ("{}"), and its id.
    assert.equal(await db.byteCount("ix1"), 8 + 2 + 1 + (8 + 2 + 2), "summed once");
    assert.equal(db.indexById("t1", "ix1")?.target_recall, null);
  } finally {
    db.close();
  }
});
