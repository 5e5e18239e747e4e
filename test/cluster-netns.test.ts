// A cluster over a real network link: three nodes (one API-only, two executors), each in a network
// namespace of its own with its own address on a private bridge (veth pairs made by the test),
// Redis on the bridge. The nodes find each other at their own addresses; a sandbox on one executor
// is served through the API node and through the other executor, a streamed run and a 100 MiB
// upload and download included, with the forwarding nodes' memory sampled during the transfer.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import { after, before, test } from "node:test";
import { createSandbox, pythonStdout } from "./helpers/api.js";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { makeNetwork, type PrivateNetwork } from "./helpers/netns.js";
import { sse } from "./helpers/sse.js";
import { client, type TestServer } from "./helpers/server.js";

let network: PrivateNetwork;
let cluster: TestCluster;
const nodes: TestServer[] = [];

before(async () => {
  network = makeNetwork(3);
  cluster = await startCluster({ leaseMs: 3000, network });
  nodes.push(await cluster.node("node-a", "api"));
  nodes.push(await cluster.node("node-b", "executor"));
  nodes.push(await cluster.node("node-c", "executor"));
});

after(async () => {
  await cluster?.dispose();
  network?.dispose();
});

const call = (node: TestServer) => client({ url: node.url, key: cluster.key });
const node = (i: number) => nodes[i] as TestServer;

/** Resident memory of a process, bytes. */
function rss(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb ?? 0) * 1024;
}

test("each node listens on its own namespace's address, and every node lists the others there", async () => {
  for (const [i, n] of nodes.entries()) assert.equal(new URL(n.url).hostname, network.nodes[i]?.address);
  const res = await client({ url: node(2).url, key: cluster.adminKey })<{ nodes: { id: string; url: string; state: string }[] }>(
    "GET",
    "/v1/admin/nodes",
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(
    res.body.nodes.map((n) => [n.id, n.url, n.state]),
    nodes.map((n, i) => [`node-${"abc"[i]}`, n.url, "up"]),
  );
  // The namespaces are separate: node A's address is not one of this namespace's own.
  assert.equal(fs.readFileSync("/proc/net/fib_trie", "utf8").includes(`|-- ${network.nodes[0]?.address}\n`), false);
});

test("a sandbox is served through the API node and the other executor over the link: runs, a stream, 100 MiB both ways", async (t) => {
  const a = node(0);
  const id = await createSandbox(call(a));
  assert.equal(await pythonStdout(call(a), id, "print(6 * 7)"), "42\n");
  // Whichever executor runs it, the other one forwards too.
  for (const via of [node(1), node(2)]) assert.equal(await pythonStdout(call(via), id, "print('via')"), "via\n");

  const stream = await sse({ url: node(1).url, key: cluster.key }, "POST", `/v1/agents/sandboxes/${id}/code/run`, {
    language: "python",
    stream: true,
    code: "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second', flush=True)",
  });
  assert.equal(stream.status, 200);
  const first = stream.events.find((e) => e.event === "stdout" && JSON.stringify(e.data).includes("first"));
  const end = stream.events.find((e) => e.event === "end");
  assert.ok(first && end, JSON.stringify(stream.events));
  assert.ok(end.at - first.at > 1000, "streamed as it ran, not buffered");

  // 100 MiB up through the API node, down through an executor (for a sandbox of the other one, or
  // its own): the forwarding nodes' memory stays far below the file's size.
  const bytes = crypto.randomBytes(100 * 2 ** 20);
  const digest = crypto.createHash("sha256").update(bytes).digest("hex");
  const base = { a: rss(a.process.pid as number), b: rss(node(1).process.pid as number), c: rss(node(2).process.pid as number) };
  const peak = { ...base };
  const sampler = setInterval(() => {
    peak.a = Math.max(peak.a, rss(a.process.pid as number));
    peak.b = Math.max(peak.b, rss(node(1).process.pid as number));
    peak.c = Math.max(peak.c, rss(node(2).process.pid as number));
  }, 50);
  try {
    const form = new FormData();
    form.append("file", new Blob([bytes]), "blob.bin");
    const up = await fetch(`${a.url}/v1/agents/sandboxes/${id}/files/upload?path=/home/user/blob.bin`, {
      method: "POST",
      headers: { authorization: `Bearer ${cluster.key}` },
      body: form,
    });
    assert.equal(up.status, 200, await up.clone().text());
    for (const via of [a, node(1), node(2)]) {
      const down = await fetch(`${via.url}/v1/agents/sandboxes/${id}/download?path=/home/user/blob.bin`, {
        headers: { authorization: `Bearer ${cluster.key}` },
      });
      assert.equal(down.status, 200);
      const hash = crypto.createHash("sha256");
      for await (const chunk of down.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk);
      assert.equal(hash.digest("hex"), digest, `the download through ${via.url}`);
    }
  } finally {
    clearInterval(sampler);
  }
  // The nodes that forwarded (the API node, and the executor that does not run the sandbox) hold
  // no file in memory; the owner writes it into the sandbox and reads it back (its own tests bound that).
  const live = async (n: TestServer) => /^agentbox_live_sandboxes 1$/m.test(await (await fetch(`${n.url}/metrics`)).text());
  const forwarders = ["a", (await live(node(1))) ? "c" : "b"] as const;
  const grewMiB = (k: keyof typeof base) => (peak[k] - base[k]) / 2 ** 20;
  t.diagnostic(
    `growth during the transfers: a ${grewMiB("a").toFixed(0)} MiB, b ${grewMiB("b").toFixed(0)} MiB, c ${grewMiB("c").toFixed(0)} MiB`,
  );
  for (const k of forwarders) assert.ok(grewMiB(k) < 64, `node ${k} grew by ${grewMiB(k).toFixed(0)} MiB during 100 MiB transfers`);

  assert.equal((await call(node(2))("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
});
