// Who owns the live rows of a SQLite file when a store opens it: a lone node takes over those
// written under another node id (its host was renamed); the nodes of a cluster that share one file
// (AGENTBOX_DATABASE_FILE) keep each their own, so a node that starts never adopts another's.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { SqliteSandboxStore } from "../../src/sandbox/store/sandboxes.js";
import { openDb } from "../../src/store/db.js";
import { sandbox } from "../contract/records.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-owner-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test("a lone node's file: live rows of another node id become this node's", async () => {
  const db = openDb(path.join(dir, "lone"));
  await new SqliteSandboxStore(db, "old-host").insert(sandbox("s1", { nodeId: "old-host" }));
  const store = new SqliteSandboxStore(db, "new-host");
  assert.deepEqual(
    (await store.listRunning()).map((s) => s.id),
    ["s1"],
  );
  assert.equal((await store.get("s1"))?.nodeId, "new-host");
});

test("a file shared by the nodes of a cluster: a node that opens it leaves the other nodes' live rows to them", async () => {
  const db = openDb(path.join(dir, "shared"));
  const b = new SqliteSandboxStore(db, "node-b", false);
  await b.insert(sandbox("on-b", { nodeId: "node-b" }));
  const c = new SqliteSandboxStore(db, "node-c", false);
  await c.insert(sandbox("on-c", { nodeId: "node-c" }));
  // node-b starts again (a restart): it finds its own sandbox only.
  const again = new SqliteSandboxStore(db, "node-b", false);
  assert.deepEqual(
    (await again.listRunning()).map((s) => s.id),
    ["on-b"],
  );
  assert.equal((await again.get("on-c"))?.nodeId, "node-c");
  assert.deepEqual(
    (await c.listRunning()).map((s) => s.id),
    ["on-c"],
  );
});
