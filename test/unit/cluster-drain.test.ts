// A drain's moves (src/cluster/drain.ts) against a stand-in for the sandbox area and a real HTTP
// server answering the internal adopt route: what moves, what stays (no executor, a refusal, a
// failed snapshot), a run under way, and the route's signature check.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { ChannelAuth } from "../../src/cluster/channel-auth.js";
import { adoptRoute, DrainMoves, type MovableSandboxes } from "../../src/cluster/drain.js";
import { ApiError } from "../../src/errors.js";

const SECRET = "drain-test-secret";
type Status = "running" | "paused" | "hibernated";

/** The draining node's sandboxes, as the sandbox area would keep them, with what was done to each. */
function sandboxes(initial: Record<string, Status>) {
  const state = new Map(Object.entries(initial));
  const owner = new Map([...state.keys()].map((id) => [id, "node-a"]));
  const calls: string[] = [];
  const area = {
    state,
    owner,
    calls,
    busy: new Set<string>(),
    failSnapshot: new Set<string>(),
    movable: () => [...state].map(([id, status]) => ({ id, tenantId: "t", status })),
    async hibernateNow(id: string) {
      calls.push(`hibernate ${id}`);
      if (area.busy.has(id)) return "busy" as const;
      if (area.failSnapshot.has(id)) throw new ApiError("quota_exceeded", "over the storage quota");
      state.set(id, "hibernated");
      return "hibernated" as const;
    },
    async forget(id: string) {
      calls.push(`forget ${id}`);
      state.delete(id);
    },
    async wakeHere(_tenantId: string, id: string) {
      calls.push(`wake ${id}`);
      state.set(id, "running");
    },
    ownerOf: async (id: string) => owner.get(id),
  } satisfies MovableSandboxes & Record<string, unknown>;
  return area;
}

/** What the executor asked to adopt does: `answer` decides, and the sandbox is its own when it says yes. */
let adopt: (id: string, from: string, wake: boolean) => Promise<boolean> = async () => true;
const adopted: string[] = [];
let server: http.Server;
let url: string;

before(async () => {
  const route = adoptRoute(new ChannelAuth(SECRET, "node-b"), (id, from, wake) => {
    adopted.push(`${id} ${from} ${wake}`);
    return adopt(id, from, wake);
  });
  server = http.createServer((req, res) => {
    if (!route(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => new Promise<void>((r) => server.close(() => r())));

function drainOf(area: ReturnType<typeof sandboxes>, targets = [{ id: "node-b", freeMemoryMb: 1000, liveSandboxes: 0 }]) {
  const handedOff: string[] = [];
  const moves = new DrainMoves({
    selfId: "node-a",
    sandboxes: area,
    targets: () => targets,
    urlOf: (id) => (id === "node-b" ? url : undefined),
    channel: new ChannelAuth(SECRET, "node-a"),
    placementSample: 3,
    graceMs: 0,
    concurrency: 2,
    handedOff: (id) => handedOff.push(id),
    log: () => {},
  });
  return { moves, handedOff };
}

test("running, paused and hibernated sandboxes move; the running ones are woken on their new node", async () => {
  adopted.length = 0;
  adopt = async () => true;
  const area = sandboxes({ r: "running", p: "paused", h: "hibernated" });
  const { moves, handedOff } = drainOf(area);
  await moves.kick();
  assert.equal(moves.moved, 3);
  assert.deepEqual(adopted.sort(), ["h node-a false", "p node-a false", "r node-a true"]);
  assert.deepEqual(handedOff.sort(), ["h", "p", "r"]);
  assert.equal(area.state.size, 0);
  assert.equal(moves.newOwner("r"), "node-b");
  assert.equal(moves.waitFor("r"), undefined);
  assert.equal(moves.holding(), false);
});

test("with no other executor nothing is snapshotted; one that joins later receives them", async () => {
  adopt = async () => true;
  const area = sandboxes({ r: "running", h: "hibernated" });
  const targets: { id: string; freeMemoryMb: number; liveSandboxes: number }[] = [];
  const { moves } = drainOf(area, targets);
  await moves.kick();
  assert.deepEqual(area.calls, []);
  assert.equal(moves.moved, 0);
  // A hibernated one that may still move holds the node.
  assert.equal(moves.holding(), true);
  targets.push({ id: "node-b", freeMemoryMb: 1000, liveSandboxes: 0 });
  await moves.kick();
  assert.equal(moves.moved, 2);
});

test("a sandbox nobody takes runs here again and stays; a failed snapshot stays; neither is tried again", async () => {
  adopt = async () => {
    throw new ApiError("at_capacity", "full", 5);
  };
  const area = sandboxes({ r: "running", s: "running" });
  area.failSnapshot.add("s");
  const { moves, handedOff } = drainOf(area);
  await moves.kick();
  assert.equal(moves.moved, 0);
  assert.deepEqual(handedOff, []);
  assert.deepEqual(area.calls.sort(), ["hibernate r", "hibernate s", "wake r"]);
  assert.equal(area.state.get("r"), "running");
  area.calls.length = 0;
  adopt = async () => true;
  await moves.kick();
  assert.deepEqual(area.calls, []);
  assert.equal(moves.holding(), false);
});

test("a refusal whose sandbox the node took after all (the records say so) counts as moved there", async () => {
  const area = sandboxes({ r: "running" });
  adopt = async (id) => {
    area.owner.set(id, "node-b");
    return false;
  };
  const { moves } = drainOf(area);
  await moves.kick();
  assert.equal(moves.moved, 1);
  assert.equal(moves.newOwner("r"), "node-b");
  assert.ok(!area.calls.includes("wake r"));
});

test("a sandbox busy with a run past the grace is left as it was and tried again at the next pass", async () => {
  adopt = async () => true;
  const area = sandboxes({ r: "running" });
  area.busy.add("r");
  const { moves } = drainOf(area);
  await moves.kick();
  assert.equal(moves.moved, 0);
  area.busy.delete("r");
  await moves.kick();
  assert.equal(moves.moved, 1);
});

test("the adopt route answers only a valid node signature", async () => {
  const path = "/v1/internal/sandboxes/x/adopt?from=node-a&wake=1";
  const unsigned = await fetch(`${url}${path}`, { method: "POST" });
  assert.equal(unsigned.status, 401);
  const forged = await fetch(`${url}${path}`, { method: "POST", headers: new ChannelAuth("another-secret", "node-a").sign("POST", path) });
  assert.equal(forged.status, 401);
  adopt = async () => true;
  const signed = await fetch(`${url}${path}`, { method: "POST", headers: new ChannelAuth(SECRET, "node-a").sign("POST", path) });
  assert.equal(signed.status, 200);
  assert.deepEqual(await signed.json(), { sandbox_id: "x" });
});
