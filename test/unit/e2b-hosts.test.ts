// E2B host names: which Host goes where, what the rewrite does to the request's headers, and which
// AGENTBOX_E2B_DOMAIN values are accepted.
import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { test } from "node:test";
import { e2bDomain, e2bHostMatcher, e2bHostRewriter } from "../../src/e2b/hosts.js";
import { ptyInput, ptyResize, ptySize } from "../../src/e2b/pty.js";

const ID = "0f8b7c2e-1d4a-4b6e-9c3f-2a1b0c9d8e7f";

function request(host: string | undefined, url: string, headers: Record<string, string> = {}): IncomingMessage {
  const all: Record<string, string> = { ...(host === undefined ? {} : { host }), ...headers };
  return { url, headers: { ...all }, rawHeaders: Object.entries(all).flat() } as unknown as IncomingMessage;
}

test("envd's and the code interpreter's ports go to /e2b with the sandbox named by the host", () => {
  const rewrite = e2bHostRewriter("e2b.example.com");
  const req = request(`49983-${ID}.e2b.example.com`, "/files?path=a.txt", { "e2b-sandbox-id": "someone-else" });
  assert.equal(rewrite(req), "/e2b/files?path=a.txt");
  assert.equal(req.headers["e2b-sandbox-id"], ID, "the host wins");
  assert.equal(rewrite(request(`49999-${ID}.E2B.Example.com`, "/execute")), "/e2b/execute", "host names are case-insensitive");
  assert.equal(rewrite(request("api.e2b.example.com", "/v2/sandboxes?limit=2")), "/e2b/v2/sandboxes?limit=2");
});

test("any other port goes to the port relay; an E2B access token becomes the bearer key and is removed", () => {
  const rewrite = e2bHostRewriter("e2b.example.com:8443");
  const req = request(`3000-${ID}.e2b.example.com:8443`, "/app/?x=1", { "E2B-Traffic-Access-Token": "key1" });
  req.headers["e2b-traffic-access-token"] = "key1";
  assert.equal(rewrite(req), `/v1/agents/sandboxes/${ID}/ports/3000/app/?x=1`);
  assert.equal(req.headers.authorization, "Bearer key1");
  assert.equal(req.headers["e2b-traffic-access-token"], undefined);
  assert.ok(!req.rawHeaders.some((h) => h.toLowerCase() === "e2b-traffic-access-token"), "nor in the raw headers (upgrades)");
  // E2B's key format is decoded; an Authorization already given is kept.
  const hex = request(`3000-${ID}.e2b.example.com`, "/", { "x-access-token": `e2b_${Buffer.from("abc").toString("hex")}` });
  rewrite(hex);
  assert.equal(hex.headers.authorization, "Bearer abc");
  const both = request(`3000-${ID}.e2b.example.com`, "/", { "x-access-token": "k", authorization: "Bearer native" });
  rewrite(both);
  assert.equal(both.headers.authorization, "Bearer native");
  assert.equal(both.headers["x-access-token"], undefined);
});

test("other hosts, and hosts under the domain that name no sandbox port, keep their URL", () => {
  const rewrite = e2bHostRewriter("e2b.example.com");
  for (const host of [
    "agentbox.example.com",
    "e2b.example.com",
    "evil-e2b.example.com",
    `49983-${ID}.e2b.example.com.evil.org`,
    `0-${ID}.e2b.example.com`,
    `70000-${ID}.e2b.example.com`,
    `x.49983-${ID}.e2b.example.com`,
    `49983_${ID}.e2b.example.com`,
    undefined,
  ]) {
    const req = request(host, "/v1/agents/sandboxes");
    assert.equal(rewrite(req), "/v1/agents/sandboxes", String(host));
    assert.equal(req.headers["e2b-sandbox-id"], undefined);
  }
  assert.equal(rewrite(request(`49983-${ID}.e2b.example.com`, "http://other/x")), "http://other/x", "absolute-form is left alone");
});

test("the matcher tells which requests the rewriter may change (a cluster relays the others before routing), without changing any", () => {
  const onHost = e2bHostMatcher("e2b.example.com:8443");
  for (const host of [`49983-${ID}.e2b.example.com`, `8080-${ID}.E2B.example.com:8443`, "api.e2b.example.com", "x.e2b.example.com"]) {
    const req = request(host, "/v1/agents/sandboxes/abc/code/run", { "x-access-token": "t" });
    assert.equal(onHost(req), true, host);
    assert.deepEqual(req.headers, { host, "x-access-token": "t" }, "headers left as they came");
  }
  for (const host of [undefined, "e2b.example.com", "example.com", "e2b.example.com.evil.org", "127.0.0.1:8080"])
    assert.equal(onHost(request(host, "/v1/agents/sandboxes/abc/code/run")), false, String(host));
});

test("AGENTBOX_E2B_DOMAIN: a domain name, optionally with a port; anything else refused", () => {
  assert.equal(e2bDomain(undefined), undefined);
  assert.equal(e2bDomain(" "), undefined);
  assert.equal(e2bDomain("E2B.Example.com."), "e2b.example.com");
  assert.equal(e2bDomain("e2b.localhost:8443"), "e2b.localhost:8443");
  for (const bad of ["https://e2b.example.com", "e2b.example.com/x", "*.example.com", "a..b", "-a.com", "a.com:port"])
    assert.throws(() => e2bDomain(bad), /AGENTBOX_E2B_DOMAIN/, bad);
});

test("PTY frames: keystrokes and sizes for the in-sandbox helper", () => {
  assert.deepEqual([...ptyInput(Buffer.from("ls\n"))], [0, 0, 0, 0, 3, 0x6c, 0x73, 0x0a]);
  assert.deepEqual([...ptyResize(40, 120)], [1, 0, 0, 0, 4, 0, 40, 0, 120]);
  assert.deepEqual(ptySize({ size: { rows: 24, cols: 80 } }), { rows: 24, cols: 80 });
  for (const bad of [
    undefined,
    {},
    { size: { rows: 0, cols: 80 } },
    { size: { rows: 24, cols: 70000 } },
    { size: { rows: "24", cols: 80 } },
  ])
    assert.throws(() => ptySize(bad), /rows/);
});
