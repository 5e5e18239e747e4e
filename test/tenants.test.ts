// Tenant limits on the tenant's own cgroup: a tenant's sandboxes together cannot take more processes
// or memory than its quotas (a fork bomb or an allocation in each of two sandboxes), while another
// tenant's sandboxes keep working; quota changes by the operator reach the live group; nothing is
// left behind. Quotas are set in the service's database before it starts (as an operator would
// through the admin API), and changed live through the admin API.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { tenantGroupName } from "../src/sandbox/cgroup.js";
import { openDb } from "../src/store/db.js";
import { KeyDirectory } from "../src/store/key-directory.js";
import { SqliteKeyStore } from "../src/store/keys.js";
import { SqliteTenantStore } from "../src/store/tenants.js";
import { type Call, createSandbox } from "./helpers/api.js";
import { cgroupsOf, eventually, serviceCgroups } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

const SMALL = "tenant-small";
const OTHER = "tenant-other";
const SMALL_PROCESSES = 80;
const SMALL_MEMORY_MB = 400;
const ADMIN_KEY = "admin_tenants_test_key_0123456789";

let server: TestServer;
let small: Call;
let other: Call;
const seen: string[] = [];

before(async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-tenants-"));
  const db = openDb(dataDir);
  const keys = new KeyDirectory(new SqliteKeyStore(db));
  const smallKey = (await keys.create({ name: "small", tenantId: SMALL })).key;
  const otherKey = (await keys.create({ name: "other", tenantId: OTHER })).key;
  await keys.close();
  await new SqliteTenantStore(db).put(SMALL, { maxProcesses: SMALL_PROCESSES, memoryMb: SMALL_MEMORY_MB }, new Date().toISOString());
  db.close();
  server = await startServer({ dataDir, env: { AGENTBOX_ADMIN_KEY: ADMIN_KEY } });
  small = client({ url: server.url, key: smallKey });
  other = client({ url: server.url, key: otherKey });
});

after(async () => {
  await server?.dispose();
});

/** The tenant's group in each hierarchy of this service. */
function tenantDirs(tenantId: string): string[] {
  return serviceCgroups(server.workspaceDir)
    .map((d) => path.join(d, tenantGroupName(tenantId)))
    .filter((d) => fs.existsSync(d));
}

function tenantFile(tenantId: string, file: string): string {
  const dir = tenantDirs(tenantId).find((d) => fs.existsSync(path.join(d, file)));
  assert.ok(dir, `no ${file} in the group of ${tenantId}`);
  return fs.readFileSync(path.join(dir, file), "utf8").trim();
}

/** A sandbox of the caller's whose processes are in its tenant's group (the move follows the create). */
async function sandboxOf(call: Call, tenantId: string): Promise<string> {
  const id = await createSandbox(call);
  seen.push(id);
  const group = tenantGroupName(tenantId);
  assert.ok(
    await eventually(() => {
      // The memory group the sandbox started in stays (empty) until it ends: only charges are left there.
      const dirs = cgroupsOf(id);
      const inTenant = (d: string) => path.basename(path.dirname(d)) === group;
      const empty = (d: string) => {
        try {
          return fs.readFileSync(path.join(d, "cgroup.procs"), "utf8").trim() === "";
        } catch {
          return true; // removed meanwhile
        }
      };
      return dirs.some(inTenant) && dirs.every((d) => inTenant(d) || empty(d));
    }, 5000),
    `sandbox ${id} is in its tenant's group: ${cgroupsOf(id)}`,
  );
  return id;
}

async function run(call: Call, id: string, code: string, timeout = 30) {
  const res = await call<{ logs: { stdout: string; stderr: string }; error: string | null }>(
    "POST",
    `/v1/agents/sandboxes/${id}/code/run`,
    { language: "python", code, timeout },
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** Forks children that sleep until the fork fails or `max` are made; prints how many it made. */
const FORK_BOMB = `
import os, time
made = 0
try:
    while made < 400:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        made += 1
except OSError:
    pass
print(made)
`;

describe("a tenant's processes", () => {
  test(`two fork bombs of one tenant stay within its ${SMALL_PROCESSES} processes together; another tenant is unaffected`, {
    timeout: 120_000,
  }, async () => {
    const a = await sandboxOf(small, SMALL);
    const b = await sandboxOf(small, SMALL);
    // Kernels up first: the bomb in the first sandbox leaves the second no process to start one.
    for (const id of [a, b]) assert.equal((await run(small, id, "print(1)")).logs.stdout, "1\n");
    assert.equal(tenantFile(SMALL, "pids.max"), String(SMALL_PROCESSES));

    const madeA = Number((await run(small, a, FORK_BOMB)).logs.stdout.trim());
    const madeB = Number((await run(small, b, FORK_BOMB)).logs.stdout.trim());
    // Each sandbox alone may hold 256: without the tenant's group the two would make ~500.
    assert.ok(madeA > 10, `the first sandbox could fork (${madeA})`);
    assert.ok(madeA + madeB < SMALL_PROCESSES, `together ${madeA} + ${madeB} stay under the tenant's ${SMALL_PROCESSES}`);
    assert.ok(Number(tenantFile(SMALL, "pids.current")) <= SMALL_PROCESSES);

    // Another tenant: a fresh sandbox starts, runs, and forks more than the small tenant's whole quota.
    const c = await sandboxOf(other, OTHER);
    const madeC = Number((await run(other, c, FORK_BOMB.replace("400", "120"))).logs.stdout.trim());
    assert.equal(madeC, 120, "the other tenant forks freely");

    for (const id of [a, b]) assert.equal((await small("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
    assert.equal((await other("DELETE", `/v1/agents/sandboxes/${c}`)).status, 200);
  });
});

describe("a tenant's memory", () => {
  test(`allocations in two sandboxes over the tenant's ${SMALL_MEMORY_MB} MiB end in out of memory; another tenant is unaffected`, {
    timeout: 120_000,
  }, async () => {
    // The previous test's killed fork bombs are gone (on a busy host that can take a moment).
    assert.ok(await eventually(() => Number(tenantFile(SMALL, "pids.current")) < 10, 30_000), "the tenant's processes ended");
    const a = await sandboxOf(small, SMALL);
    const b = await sandboxOf(small, SMALL);
    // Bytes really written (a zero-filled bytearray would not be charged until touched).
    const held = await run(small, a, "held = b'a' * (150 * 2**20)\nprint(len(held) >> 20)");
    assert.deepEqual([held.logs.stdout, held.error], ["150\n", null]);
    // 150 + 350 > 400 (each sandbox alone may have 1024): the larger, the second, is killed.
    const over = await run(small, b, "big = b'b' * (350 * 2**20)\nprint(len(big) >> 20)");
    assert.match(over.error ?? "", /^Out of memory/, JSON.stringify(over));
    const max = Number(tenantFile(SMALL, "memory.max_usage_in_bytes"));
    assert.ok(max <= SMALL_MEMORY_MB * 2 ** 20, `the tenant's group peaked at ${max >> 20} MiB`);
    // The first sandbox kept its memory and state; the second works again.
    assert.equal((await run(small, a, "print(len(held) >> 20)")).logs.stdout, "150\n");
    assert.equal((await run(small, b, "print(2)")).logs.stdout, "2\n");

    // Another tenant's single sandbox may hold more than the small tenant's whole quota.
    const c = await sandboxOf(other, OTHER);
    const big = await run(other, c, "big = b'c' * (500 * 2**20)\nprint(len(big) >> 20)");
    assert.deepEqual([big.logs.stdout, big.error], ["500\n", null]);
    for (const id of [a, b]) assert.equal((await small("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
    assert.equal((await other("DELETE", `/v1/agents/sandboxes/${c}`)).status, 200);
  });
});

describe("quota changes and clean-up", () => {
  test("a quota set through the admin API applies to the tenant's live group", async () => {
    const id = await sandboxOf(small, SMALL);
    const admin = client({ url: server.url, key: ADMIN_KEY });
    const put = await admin("PUT", `/v1/admin/tenants/${SMALL}`, { max_processes: 64, memory_mb: 512 });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(tenantFile(SMALL, "pids.max"), "64");
    assert.equal(Number(tenantFile(SMALL, "memory.limit_in_bytes")), 512 * 2 ** 20);
    // Back to the default: half the host's memory.
    assert.equal((await admin("PUT", `/v1/admin/tenants/${SMALL}`, { memory_mb: null })).status, 200);
    assert.equal(Number(tenantFile(SMALL, "memory.limit_in_bytes")), Math.floor(os.totalmem() / 2 ** 21) * 2 ** 20);
    assert.equal((await small("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  });

  test("ended sandboxes leave no group; a stopped service leaves no tenant or service group", async () => {
    for (const id of seen) assert.ok(await eventually(() => cgroupsOf(id).length === 0, 5000), `cgroup of ${id} left: ${cgroupsOf(id)}`);
    assert.ok(tenantDirs(SMALL).length > 0, "the tenant's group stays while the service runs");
    await server.stop();
    assert.deepEqual(serviceCgroups(server.workspaceDir), [], "the service's groups are removed at stop");
  });
});
