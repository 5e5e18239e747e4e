// Connection caps of sandboxes' network plumbing (per sandbox, per tenant, per node), and the
// listeners that must survive accept() failing (EMFILE is reported as an 'error' on the server).
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";
import { pino } from "pino";
import { limitConnections } from "../../src/api/connections.js";
import { ConnectionBudget, defaultBudget, type Slot } from "../../src/network/budget.js";
import { egressServer } from "../../src/network/egress.js";
import { PortBroker } from "../../src/network/ports.js";

test("the budget refuses at the sandbox's, the tenant's and the node's cap, and a slot is released once", () => {
  const budget = new ConnectionBudget({ perSandbox: 2, perTenant: 3, total: 4 });
  const slots: Slot[] = [];
  const take = (t: string, s: string) => {
    const r = budget.take(t, s);
    if ("release" in r) slots.push(r);
    return "release" in r ? "ok" : r.refused;
  };
  assert.deepEqual([take("t1", "a"), take("t1", "a"), take("t1", "a")], ["ok", "ok", "sandbox"]);
  assert.deepEqual([take("t1", "b"), take("t1", "b")], ["ok", "tenant"]);
  assert.deepEqual([take("t2", "c"), take("t2", "c")], ["ok", "node"]);
  const first = slots[0] as Slot;
  first.release();
  first.release();
  assert.deepEqual(budget.count("t1", "a"), { sandbox: 1, tenant: 2, node: 3 });
  assert.equal(take("t2", "d"), "ok");
  assert.equal(take("t2", "d"), "node");
});

test("default caps follow the open-file limit", () => {
  assert.deepEqual(defaultBudget(1024), { total: 128, perTenant: 32, perSandbox: 32 });
  assert.deepEqual(defaultBudget(65536), { total: 8192, perTenant: 2048, perSandbox: 128 });
  assert.deepEqual(defaultBudget(64), { total: 64, perTenant: 16, perSandbox: 16 });
});

test("accept() failing on any of the service's listeners is an error it survives", () => {
  const emfile = Object.assign(new Error("accept EMFILE"), { code: "EMFILE", syscall: "accept" });
  const egress = egressServer({
    resolve: async () => ({ addresses: [], trusted: [] }),
    decideByName: () => undefined,
    decide: () => ({ allowed: false, reason: "test" }),
    record: () => {},
    count: () => {},
    admit: () => ({ release() {} }),
  });
  assert.doesNotThrow(() => egress.server.emit("error", emfile));
  const broker = new PortBroker();
  assert.doesNotThrow(() => broker.server.emit("error", emfile));
  const api = http.createServer();
  limitConnections(api, { maxConnections: 10, maxConnectionsPerAddress: 5 }, pino({ level: "silent" }));
  assert.doesNotThrow(() => api.emit("error", emfile));
});
