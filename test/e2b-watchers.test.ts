// End to end: the E2B polled watchers' bounds, as raw Connect calls (the Python SDK's synchronous
// watch_dir): a watch that ends by itself frees its events at once, a tenant's watches are capped
// over all its sandboxes, a watcher's waiting events are bounded in bytes, and a watcher nobody
// asks expires. What the service holds is read from its /metrics.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { Sandbox } from "e2b";
import { e2bService, filesystemRpc } from "./helpers/e2b.js";

// One node (a host given): the watchers live in the process whose /metrics is read.
const e2b = e2bService({
  host: "127.0.0.1",
  env: {
    AGENTBOX_E2B_MAX_WATCHERS: "4",
    AGENTBOX_E2B_MAX_WATCHERS_PER_TENANT: "6",
    AGENTBOX_E2B_WATCHER_EVENT_BYTES: "8192",
    AGENTBOX_E2B_WATCHER_IDLE_S: "6",
  },
});

const rpc = (id: string, method: string, message: unknown) => filesystemRpc(e2b.server, id, method, message);

async function createWatcher(id: string, path: string): Promise<string> {
  const r = await rpc(id, "CreateWatcher", { path });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.watcherId as string;
}

/** One of the service's own gauges or counters, as /metrics shows it now. */
async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${e2b.server.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.slice(name.length + 1));
}

/** Waits (up to 20 s) until `check` holds. */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** `n` files with 200-character names in `dir` of the sandbox. */
async function makeFiles(sbx: Sandbox, dir: string, n: number): Promise<void> {
  const r = await sbx.commands.run(
    `cd ${dir} && for i in $(seq 1 ${n}); do touch "$(printf '%03d' $i)$(printf 'x%.0s' $(seq 1 197))"; done`,
  );
  assert.equal(r.exitCode, 0, r.stderr);
}

describe("polled watchers are bounded", () => {
  let sbx: Sandbox;
  before(async () => {
    sbx = await Sandbox.create();
    e2b.sandboxes.push(sbx.sandboxId);
  });

  test("a watch that ends by itself frees its events at once; its error is told once, then it is gone", async () => {
    await sbx.files.makeDir("doomed");
    const watcherId = await createWatcher(sbx.sandboxId, "doomed");
    await makeFiles(sbx, "doomed", 20);
    await until("20 events waiting", async () => (await metric("agentbox_e2b_watcher_queued_events")) >= 20);
    await sbx.files.remove("doomed");
    await until("the failed watcher's events freed", async () => (await metric("agentbox_e2b_watcher_queued_events")) === 0);
    assert.equal(await metric("agentbox_e2b_watcher_queued_bytes"), 0);
    assert.equal(await metric("agentbox_e2b_watcher_records"), 1, "its error is kept for the next ask");
    const told = await rpc(sbx.sandboxId, "GetWatcherEvents", { watcherId });
    assert.equal(told.status, 404, JSON.stringify(told.body));
    assert.equal(await metric("agentbox_e2b_watcher_records"), 0);
    assert.equal((await rpc(sbx.sandboxId, "GetWatcherEvents", { watcherId })).body.code, "not_found");
  });

  test("a watcher keeps at most AGENTBOX_E2B_WATCHER_EVENT_BYTES of events: the newest, the oldest dropped", async () => {
    await sbx.files.makeDir("busy");
    const watcherId = await createWatcher(sbx.sandboxId, "busy");
    const droppedBefore = await metric("agentbox_e2b_watcher_events_dropped_total");
    await makeFiles(sbx, "busy", 100);
    // 100 events of 232 bytes are far over 8 KiB: once all are seen, at most 35 are kept.
    await until(
      "the 100th file seen",
      async () =>
        (await metric("agentbox_e2b_watcher_events_dropped_total")) -
          droppedBefore +
          (await metric("agentbox_e2b_watcher_queued_events")) >=
        100,
    );
    assert.ok((await metric("agentbox_e2b_watcher_queued_bytes")) <= 8192);
    const r = await rpc(sbx.sandboxId, "GetWatcherEvents", { watcherId });
    assert.equal(r.status, 200);
    const events = r.body.events as { name: string; type: string }[];
    assert.ok(events.length > 0 && events.length <= 35, `${events.length} events kept`);
    assert.ok(
      events.some((e) => e.name.startsWith("100")),
      "the newest are kept",
    );
    assert.equal((await rpc(sbx.sandboxId, "RemoveWatcher", { watcherId })).status, 200);
    assert.equal(await metric("agentbox_e2b_watcher_records"), 0, "a removed watcher is forgotten at once");
  });

  test("AGENTBOX_E2B_MAX_WATCHERS_PER_TENANT counts every sandbox of the tenant", async () => {
    const other = await Sandbox.create();
    e2b.sandboxes.push(other.sandboxId);
    const held: [string, string][] = [];
    try {
      for (let i = 0; i < 4; i++) held.push([sbx.sandboxId, await createWatcher(sbx.sandboxId, "/home/user")]);
      for (let i = 0; i < 2; i++) held.push([other.sandboxId, await createWatcher(other.sandboxId, "/home/user")]);
      const refused = await rpc(other.sandboxId, "CreateWatcher", { path: "/home/user" });
      assert.equal(refused.status, 429, JSON.stringify(refused.body));
      assert.equal(refused.body.code, "resource_exhausted");
      assert.match(String(refused.body.message), /tenant.*AGENTBOX_E2B_MAX_WATCHERS_PER_TENANT/);
      // A streamed watch counts too.
      await assert.rejects(
        other.files.watchDir("/home/user", () => {}),
        /tenant/,
      );
    } finally {
      for (const [id, watcherId] of held) await rpc(id, "RemoveWatcher", { watcherId });
    }
    await until("a place free again", async () => (await rpc(other.sandboxId, "CreateWatcher", { path: "/home/user" })).status === 200);
  });

  test("a watcher nobody asks is stopped and forgotten after AGENTBOX_E2B_WATCHER_IDLE_S", async () => {
    await until("the last test's watcher gone", async () => (await metric("agentbox_e2b_watcher_records")) === 0);
    const watcherId = await createWatcher(sbx.sandboxId, "/home/user");
    assert.equal(await metric("agentbox_e2b_watcher_records"), 1);
    await until("the idle watcher expired", async () => (await metric("agentbox_e2b_watcher_records")) === 0);
    assert.equal((await rpc(sbx.sandboxId, "GetWatcherEvents", { watcherId })).body.code, "not_found");
  });
});
