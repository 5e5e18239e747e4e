// The sandbox rooms (src/sandbox/registry.ts, warm-pool.ts, host.ts, lifecycle.ts, snapshot-keeper.ts):
// no room imports another (only the types of ./doors.ts), no `@internal` reach-ins; and the registry
// on its own, without sandboxes: lookup by id and tenant, counts, leaves, and the caps a create must fit.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ApiError } from "../../src/errors.js";
import type { Box } from "../../src/sandbox/box.js";
import { Registry } from "../../src/sandbox/registry.js";
import type { SandboxRecord, SandboxStore } from "../../src/sandbox/store/sandboxes.js";
import type { EffectiveQuotas } from "../../src/tenancy/store/tenants.js";

const SANDBOX = path.join(import.meta.dirname, "../../src/sandbox");
const ROOMS = ["registry.ts", "warm-pool.ts", "host.ts", "lifecycle.ts", "snapshot-keeper.ts"];

/** The relative imports of a file: [specifier, type-only]. */
function imports(file: string): [string, boolean][] {
  const text = fs.readFileSync(path.join(SANDBOX, file), "utf8");
  return [...text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+"(\.[^"]+)"/gms)].map((m) => [m[3] as string, m[2] !== undefined]);
}

test("no room imports another room or the façade; the doors only as types", () => {
  const others = [...ROOMS, "manager.ts"].map((f) => `./${f.replace(/\.ts$/, ".js")}`);
  for (const room of ROOMS) {
    for (const [spec, typeOnly] of imports(room)) {
      if (room === "lifecycle.ts" && spec === "./snapshot-keeper.js") {
        assert.ok(typeOnly, "lifecycle.ts takes the snapshot keeper's type only");
        continue;
      }
      assert.ok(!others.includes(spec), `${room} imports ${spec}`);
      if (spec === "./doors.js") assert.ok(typeOnly, `${room} imports the doors as values`);
    }
  }
});

test("no member of the sandbox area is marked @internal for another file to reach into", () => {
  for (const file of fs.readdirSync(SANDBOX).filter((f) => f.endsWith(".ts"))) {
    assert.doesNotMatch(fs.readFileSync(path.join(SANDBOX, file), "utf8"), /@internal/, file);
  }
});

const QUOTAS = { maxSandboxes: 2, memoryMb: 512, maxProcesses: 64 } as unknown as EffectiveQuotas;

function record(id: string, tenantId: string, status: SandboxRecord["status"] = "running"): SandboxRecord {
  const now = Date.now();
  return {
    id,
    tenantId,
    template: "python-base-v1",
    status,
    metadata: {},
    envVars: {},
    cpuCount: 1,
    memoryMb: 512,
    hostUid: 1,
    startedAt: new Date(now).toISOString(),
    timeoutAt: new Date(now + 3_600_000).toISOString(),
    endedAt: null,
    nodeId: "n1",
  };
}

function registry(ended: SandboxRecord[] = [], maxSandboxes = 3) {
  const store = { get: async (id: string) => ended.find((r) => r.id === id) } as unknown as SandboxStore;
  const state = { closing: false, lowMemory: false };
  return {
    state,
    reg: new Registry(
      store,
      maxSandboxes,
      state,
      () => QUOTAS,
      () => {},
    ),
  };
}

const box = (name: string) => ({ name }) as unknown as Box;
const code = (c: string) => (err: unknown) => err instanceof ApiError && err.code === c;

test("the registry finds a sandbox by id for its own tenant only, counts per tenant, and tells who listens when one leaves", async () => {
  const { reg } = registry([record("old", "a", "terminated")]);
  reg.join(record("s1", "a"), box("s1"), 60, "kill");
  reg.join(record("s2", "b"), box("s2"), 60, "kill");
  assert.equal(reg.liveBox("a", "s1"), reg.get("s1")?.box);
  assert.throws(() => reg.liveBox("b", "s1"), code("sandbox_not_found"), "another tenant's sandbox does not exist for them");
  assert.equal(reg.liveBox("a", "old"), undefined, "an ended one is not in memory");
  await assert.rejects(() => reg.notLive("a", "old"), code("invalid_state"), "an ended one is found, but not to run in");
  await assert.rejects(() => reg.record("b", "old"), code("sandbox_not_found"));
  assert.deepEqual(
    [...reg.byTenant()],
    [
      ["a", 1],
      ["b", 1],
    ],
  );
  const left: string[] = [];
  reg.onLeave((id) => left.push(id));
  assert.equal(reg.leave("s1")?.record.id, "s1");
  assert.equal(reg.leave("s1"), undefined, "a second leave is nothing");
  assert.deepEqual(left, ["s1"]);
  assert.deepEqual([...reg.byTenant()], [["b", 1]]);
  assert.equal(reg.size, 1);
  reg.close();
});

test("the registry's caps count the creates under way: the service's limit, the host's memory, the tenant's quota", () => {
  const { reg, state } = registry([], 3);
  reg.join(record("s1", "a"), box("s1"), 60, "kill");
  reg.reserve("a");
  assert.throws(() => reg.checkRoom("a", 1), code("quota_exceeded"), "one live and one being created: the tenant's quota of 2");
  assert.equal(reg.checkRoom("b", 1), QUOTAS);
  reg.reserve("b");
  assert.equal(reg.occupied(), 3);
  assert.throws(() => reg.checkRoom("c", 1), code("at_capacity"), "the service's limit of 3");
  reg.unreserve("a");
  reg.unreserve("b");
  assert.equal(reg.checkRoom("a", 1), QUOTAS);
  state.lowMemory = true;
  assert.throws(() => reg.checkRoom("a", 1), code("at_capacity"));
  state.closing = true;
  assert.throws(
    () => reg.checkRoom("a", 1),
    (err: unknown) => err instanceof ApiError && /shutting down/.test(err.message),
  );
  reg.close();
});
