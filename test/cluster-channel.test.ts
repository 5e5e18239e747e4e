// The cluster's own channel, against real nodes (a private Redis): a signed node request is taken
// once (the same headers sent again are refused), the nodes' own routes (/v1/internal/*) are on
// their internal listener only, and a weak AGENTBOX_CLUSTER_SECRET stops a node at start with a
// message saying how to make one.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import os from "node:os";
import { after, before, test } from "node:test";
import { sign } from "../src/cluster/channel-auth.js";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { entryArgs } from "./helpers/entry.js";
import type { TestServer } from "./helpers/server.js";

let cluster: TestCluster;
let node: TestServer;

before(async () => {
  cluster = await startCluster({ leaseMs: 15_000 });
  node = await cluster.node("node-a", "both", { AGENTBOX_WARM_POOL: "0" });
});

after(async () => {
  await cluster?.dispose();
});

test("a signed node request is taken once: the same headers sent again are refused", async () => {
  const path = "/v1/agents/sandboxes/sbx-no-such-sandbox";
  const headers = { authorization: `Bearer ${cluster.key}`, ...sign(cluster.secret, "node-b", "GET", path) };
  const first = await fetch(`${node.url}${path}`, { headers });
  // Taken as a node's request (answered here, not forwarded): the sandbox is not found.
  assert.equal(first.status, 404, await first.text());
  for (let i = 0; i < 2; i++) {
    const replay = await fetch(`${node.url}${path}`, { headers });
    assert.equal(replay.status, 401, "a replayed signed request is refused");
    assert.match(await replay.text(), /signature/);
  }
  // A new signature for the same request is its own request.
  const again = await fetch(`${node.url}${path}`, {
    headers: { authorization: `Bearer ${cluster.key}`, ...sign(cluster.secret, "node-b", "GET", path) },
  });
  assert.equal(again.status, 404);
  // The client's Host travels signed: another one put in its place is refused.
  const withHost = {
    ...headers,
    ...sign(cluster.secret, "node-b", "GET", path, Date.now(), "a.example"),
    "x-agentbox-origin-host": "b.example",
  };
  assert.equal((await fetch(`${node.url}${path}`, { headers: withHost })).status, 401);
});

test("/v1/internal/* is answered on the internal listener only: the public port answers 404", async () => {
  const route = "/v1/internal/templates/tpl-no-such-template/rootfs";
  const onPublic = await fetch(`${node.url}${route}`, { headers: sign(cluster.secret, "node-b", "GET", route) });
  assert.equal(onPublic.status, 404, "no internal route on the public port, signed or not");
  assert.notEqual(((await onPublic.json()) as { error: { code: string } }).error.code, "template_not_found");
  const internal = cluster.internalUrl(node);
  assert.notEqual(new URL(internal).port, new URL(node.url).port);
  assert.equal((await fetch(`${internal}${route}`)).status, 401, "a node's signature is required there");
  const signed = await fetch(`${internal}${route}`, { headers: sign(cluster.secret, "node-b", "GET", route) });
  assert.equal(signed.status, 404);
  assert.equal(((await signed.json()) as { error: { code: string } }).error.code, "template_not_found", "the internal route answered");
  // Nothing but the internal routes is served there.
  assert.equal((await fetch(`${internal}/health`)).status, 404);
  assert.equal((await fetch(`${internal}/v1/agents/sandboxes`, { headers: { authorization: `Bearer ${cluster.key}` } })).status, 404);
});

/** Starts the service with `secret` as a cluster node's; resolves with its exit code and stderr. */
function startWithSecret(secret: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, entryArgs("main"), {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        AGENTBOX_HOST: "127.0.0.1",
        AGENTBOX_PORT: "1",
        // Never reached: the secret is refused before anything is opened.
        AGENTBOX_REDIS_URL: "redis://127.0.0.1:1",
        AGENTBOX_CLUSTER_SECRET: secret,
        AGENTBOX_DATA_DIR: os.tmpdir(),
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`still running with secret '${secret}': ${stderr}`));
    }, 60_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

test("a cluster secret weaker than 32 random bytes stops the node at start, saying how to make one", async () => {
  for (const secret of ["CHANGE-ME", "s3cret", "0123456789abcdef0123456789abcdef0123456789abcdef", "a".repeat(80)]) {
    const { code, stderr } = await startWithSecret(secret);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /AGENTBOX_CLUSTER_SECRET is too weak/, secret);
    assert.match(stderr, /openssl rand -base64 32/);
  }
});
