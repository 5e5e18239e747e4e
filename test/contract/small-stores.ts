// The contracts of NetworkStore, DeploymentStore and UsageStore: what any implementation must do.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { UsageStore } from "../../src/inference/usage.js";
import type { NetworkPolicy } from "../../src/network/policy.js";
import type { NetworkStore } from "../../src/network/store.js";
import type { DeploymentRow, DeploymentStore } from "../../src/deployments/store.js";

const policy = (allow: string[]) => ({ allow_out: allow }) as unknown as NetworkPolicy;

export function describeNetworkStoreContract(name: string, makeStore: () => Promise<NetworkStore>): void {
  describe(`NetworkStore contract: ${name}`, () => {
    test("save, replace, list, remove; removing an unknown sandbox is harmless", async () => {
      const store = await makeStore();
      assert.deepEqual(await store.all(), []);
      await store.save("s2", "t1", policy(["b.example"]));
      await store.save("s1", "t1", policy(["a.example"]));
      await store.save("s1", "t1", policy(["c.example"]));
      assert.deepEqual(await store.all(), [
        { sandboxId: "s1", tenantId: "t1", policy: policy(["c.example"]) },
        { sandboxId: "s2", tenantId: "t1", policy: policy(["b.example"]) },
      ]);
      await store.remove("s1");
      await store.remove("nothing");
      assert.deepEqual(
        (await store.all()).map((r) => r.sandboxId),
        ["s2"],
      );
    });
  });
}

const deployment = (id: string, name: string, over: Partial<DeploymentRow> = {}): DeploymentRow => ({
  id,
  tenant_id: "t1",
  name,
  model_name: "model.gguf",
  hw_type: "cpu",
  gpu_model: null,
  gpu_count: 0,
  min_replicas: 1,
  max_replicas: 2,
  status: "creating",
  reason: null,
  created_at: "2026-01-01T00:00:00.000Z",
  node_id: "node-a",
  ...over,
});

export function describeDeploymentStoreContract(name: string, makeStore: () => Promise<DeploymentStore>): void {
  describe(`DeploymentStore contract: ${name}`, () => {
    test("insert and list oldest first; a tenant's names are unique (checked by the insert), other tenants' are not", async () => {
      const store = await makeStore();
      assert.equal(await store.insert(deployment("d2", "llm", { created_at: "2026-01-02T00:00:00.000Z" })), true);
      assert.equal(await store.insert(deployment("d1", "other")), true);
      assert.equal(await store.insert(deployment("d3", "llm")), false, "same tenant, same name");
      assert.equal(await store.insert(deployment("d4", "llm", { tenant_id: "t2" })), true);
      assert.deepEqual(
        (await store.all()).map((d) => d.id),
        ["d1", "d4", "d2"],
      );
      assert.deepEqual(
        (await store.all()).find((d) => d.id === "d2"),
        deployment("d2", "llm", { created_at: "2026-01-02T00:00:00.000Z" }),
      );
    });

    test("one row by id, by a tenant's name, and a tenant's rows oldest first; others' are not theirs", async () => {
      const store = await makeStore();
      await store.insert(deployment("d2", "llm", { created_at: "2026-01-02T00:00:00.000Z" }));
      await store.insert(deployment("d1", "other"));
      await store.insert(deployment("d4", "llm", { tenant_id: "t2", node_id: "node-b" }));
      assert.deepEqual(await store.get("d4"), deployment("d4", "llm", { tenant_id: "t2", node_id: "node-b" }));
      assert.equal(await store.get("nothing"), undefined);
      assert.equal((await store.named("t1", "llm"))?.id, "d2");
      assert.equal((await store.named("t2", "llm"))?.id, "d4");
      assert.equal(await store.named("t2", "other"), undefined);
      assert.deepEqual(
        (await store.ofTenant("t1")).map((d) => d.id),
        ["d1", "d2"],
      );
      assert.deepEqual(await store.ofTenant("t3"), []);
    });

    test("concurrent inserts of one name: exactly one wins", async () => {
      const store = await makeStore();
      const won = await Promise.all(Array.from({ length: 5 }, (_, i) => store.insert(deployment(`d${i}`, "same"))));
      assert.equal(won.filter(Boolean).length, 1);
    });

    test("status and reason change; remove frees the name; unknown ids are harmless", async () => {
      const store = await makeStore();
      await store.insert(deployment("d1", "llm"));
      await store.setStatus("d1", "failed", "replica exited");
      assert.deepEqual(
        (await store.all()).map((d) => [d.status, d.reason]),
        [["failed", "replica exited"]],
      );
      await store.setStatus("nothing", "running", null);
      await store.remove("d1");
      await store.remove("nothing");
      assert.deepEqual(await store.all(), []);
      assert.equal(await store.insert(deployment("d2", "llm")), true);
    });

    test("claim moves a deployment from its node to another once; not one being deleted, not from another node", async () => {
      const store = await makeStore();
      await store.insert(deployment("d1", "llm"));
      await store.insert(deployment("d2", "old", { node_id: null }));
      await store.insert(deployment("d3", "gone"));
      await store.setStatus("d3", "deleting", null);
      const won = await Promise.all(["node-b", "node-c", "node-d"].map((to) => store.claim("d1", "node-a", to)));
      assert.equal(won.filter(Boolean).length, 1);
      const owner = (await store.all()).find((d) => d.id === "d1")?.node_id;
      assert.equal(owner, ["node-b", "node-c", "node-d"][won.indexOf(true)]);
      assert.equal(await store.claim("d1", "node-a", "node-e"), false, "no longer on node-a");
      assert.equal(await store.claim("d2", "node-a", "node-b"), false, "not on node-a");
      assert.equal(await store.claim("d2", null, "node-b"), true, "a row of no node");
      assert.equal(await store.claim("d3", "node-a", "node-b"), false, "being deleted");
      assert.equal(await store.claim("nothing", "node-a", "node-b"), false);
      assert.deepEqual(
        (await store.all()).map((d) => [d.id, d.node_id]),
        [
          ["d1", owner],
          ["d2", "node-b"],
          ["d3", "node-a"],
        ],
      );
    });
  });
}

export function describeUsageStoreContract(name: string, makeStore: () => Promise<UsageStore>): void {
  describe(`UsageStore contract: ${name}`, () => {
    test("a batch is summed per model for one key, by model name, since a time", async () => {
      const store = await makeStore();
      assert.deepEqual(await store.summary("k1", ""), []);
      await store.insertMany([
        { keyId: "k1", model: "b", promptTokens: 10, completionTokens: 1, at: "2026-01-01T00:00:00.000Z" },
        { keyId: "k1", model: "a", promptTokens: 5, completionTokens: 5, at: "2026-01-02T00:00:00.000Z" },
        { keyId: "k1", model: "b", promptTokens: 20, completionTokens: 2, at: "2026-01-03T00:00:00.000Z" },
        { keyId: "k2", model: "a", promptTokens: 99, completionTokens: 99, at: "2026-01-03T00:00:00.000Z" },
      ]);
      await store.insertMany([]);
      assert.deepEqual(await store.summary("k1", ""), [
        { model: "a", prompt_tokens: 5, completion_tokens: 5, requests: 1 },
        { model: "b", prompt_tokens: 30, completion_tokens: 3, requests: 2 },
      ]);
      assert.deepEqual(await store.summary("k1", "2026-01-02T12:00:00.000Z"), [
        { model: "b", prompt_tokens: 20, completion_tokens: 2, requests: 1 },
      ]);
    });

    test("a large batch is written whole", async () => {
      const store = await makeStore();
      const at = "2026-01-01T00:00:00.000Z";
      await store.insertMany(Array.from({ length: 5000 }, () => ({ keyId: "k", model: "m", promptTokens: 1, completionTokens: 2, at })));
      assert.deepEqual(await store.summary("k", ""), [{ model: "m", prompt_tokens: 5000, completion_tokens: 10000, requests: 5000 }]);
    });
  });
}
