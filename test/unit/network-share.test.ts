// Share-link tokens (HMAC, expiry, exactly one sandbox and port) and the resolver override's syntax.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { test } from "node:test";
import { parseHosts, Resolver } from "../../src/network/resolver.js";
import { ShareTokens } from "../../src/network/share.js";

test("a share token is valid for its sandbox and port until it expires, and not when altered", () => {
  const tokens = new ShareTokens(Buffer.from("k".repeat(32)));
  const now = 1_800_000_000;
  const token = tokens.make({ tenantId: "t1", keyId: "k1", sandboxId: "sbx", port: 8000, expiresAt: now + 60 });
  assert.deepEqual(tokens.verify(token, "sbx", 8000, now), {
    tenantId: "t1",
    keyId: "k1",
    sandboxId: "sbx",
    port: 8000,
    expiresAt: now + 60,
  });
  assert.equal(tokens.verify(token, "sbx", 8000, now + 60), undefined, "expired");
  assert.equal(tokens.verify(token, "sbx", 8001, now), undefined, "other port");
  assert.equal(tokens.verify(token, "other", 8000, now), undefined, "other sandbox");
  assert.equal(new ShareTokens(Buffer.from("x".repeat(32))).verify(token, "sbx", 8000, now), undefined, "other key");
  const [payload, sig] = token.split(".") as [string, string];
  const forged = Buffer.from(JSON.stringify(["t2", "sbx", 8000, now + 60])).toString("base64url");
  assert.equal(tokens.verify(`${forged}.${sig}`, "sbx", 8000, now), undefined, "payload swapped");
  assert.equal(tokens.verify(`${payload}.${sig.slice(0, -1)}A`, "sbx", 8000, now), undefined);
  for (const junk of ["", ".", "a.b", `${payload}.`, "x".repeat(5000)]) assert.equal(tokens.verify(junk, "sbx", 8000, now), undefined);
});

test("a correctly signed token that names no API key (the earlier form) is refused", () => {
  const key = Buffer.from("k".repeat(32));
  const payload = Buffer.from(JSON.stringify(["t1", "sbx", 8000, 1_800_000_060])).toString("base64url");
  const sig = crypto.createHmac("sha256", key).update(payload).digest("base64url");
  assert.equal(new ShareTokens(key).verify(`${payload}.${sig}`, "sbx", 8000, 1_800_000_000), undefined);
});

test("the resolver override maps names (and optionally ports); its addresses are the trusted ones", async () => {
  const map = parseHosts("pypi.test=127.0.0.1:8080, v6.test=[::1]:9000,plain.test=10.0.0.5");
  assert.deepEqual(map.get("pypi.test"), { address: "127.0.0.1", port: 8080 });
  assert.deepEqual(map.get("v6.test"), { address: "::1", port: 9000 });
  assert.deepEqual(map.get("plain.test"), { address: "10.0.0.5", port: undefined });
  for (const bad of ["x", "=1.2.3.4", "a.test=notanip", "a.test=1.2.3.4:port"])
    assert.throws(() => parseHosts(bad), /AGENTBOX_EGRESS_HOSTS/);
  const r = new Resolver("pypi.test=127.0.0.1:8080");
  assert.deepEqual(await r.resolve("PyPI.test."), { addresses: ["127.0.0.1"], trusted: ["127.0.0.1"], port: 8080 });
  assert.deepEqual(await r.resolve("127.0.0.1"), { addresses: ["127.0.0.1"], trusted: [] });
  assert.deepEqual((await r.resolve("localhost")).trusted, [], "names outside the override are never trusted");
});

test("operator settings: the default policy and lists are validated at start-up", async () => {
  const { networkSettings } = await import("../../src/network/settings.js");
  const saved = { ...process.env };
  try {
    process.env.AGENTBOX_NETWORK_DEFAULT = '{"internet_access":true,"deny_out":["*.Example.com"]}';
    process.env.AGENTBOX_EGRESS_DENY = "10.9.0.0/16, bad.test";
    process.env.AGENTBOX_EGRESS_ALLOW_PRIVATE = "10.0.5.0/24";
    const s = networkSettings();
    assert.deepEqual(s.defaultPolicy, { internetAccess: true, allowOut: [], denyOut: ["*.example.com"] });
    assert.deepEqual(s.denyOut, ["10.9.0.0/16", "bad.test"]);
    assert.deepEqual(s.allowPrivate, ["10.0.5.0/24"]);
    process.env.AGENTBOX_EGRESS_ALLOW_PRIVATE = "mirror.internal";
    assert.throws(() => networkSettings(), /AGENTBOX_EGRESS_ALLOW_PRIVATE: 'mirror.internal' is not a CIDR/);
    delete process.env.AGENTBOX_EGRESS_ALLOW_PRIVATE;
    process.env.AGENTBOX_NETWORK_DEFAULT = '{"allow_out":["not a name"]}';
    assert.throws(() => networkSettings(), /AGENTBOX_NETWORK_DEFAULT/);
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
});
