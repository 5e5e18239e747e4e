// The egress policy: entry validation and the decision for names, wildcards, CIDRs, v4 and v6.
import assert from "node:assert/strict";
import { test } from "node:test";
import { addressKey, type NetworkPolicy, PolicyError, PolicyMatcher, parsePolicy } from "../../src/network/policy.js";

const policy = (p: Partial<NetworkPolicy>): NetworkPolicy => ({ internetAccess: false, allowOut: [], denyOut: [], ...p });
const PUBLIC_V4 = "93.184.216.34";
const PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946";

test("entries are validated strictly and normalised", () => {
  const p = parsePolicy({ allow_out: ["PyPI.org", "*.GitHub.com.", "10.1.0.0/16", "2001:DB8::/32", "1.2.3.4", "pypi.org"] });
  assert.deepEqual(p.allowOut, ["pypi.org", "*.github.com", "10.1.0.0/16", "2001:db8::/32", "1.2.3.4/32"]);
  for (const bad of [
    "",
    "*",
    "*.com.*",
    "a..b",
    "-a.com",
    "foo_bar.com",
    "10.0.0.0/33",
    "10.0.0.1/8",
    "1.2.3",
    "::1/129",
    "a.com/8",
    "http://x.com",
    "x.com:80",
    "a.123",
  ]) {
    assert.throws(() => parsePolicy({ deny_out: [bad] }), PolicyError, bad);
  }
  assert.throws(() => parsePolicy({ allow_out: Array.from({ length: 257 }, (_, i) => `h${i}.com`) }), /at most 256/);
  assert.throws(() => parsePolicy({ allow_out: "pypi.org" as unknown as string[] }), /array/);
  assert.throws(() => parsePolicy({ internet_access: "yes" as unknown as boolean }), /boolean/);
});

test("no egress unless internet access is on or an allow list names something", () => {
  const off = new PolicyMatcher(policy({}));
  assert.equal(off.decide("pypi.org", [PUBLIC_V4]).allowed, false);
  assert.match(off.decide("pypi.org", [PUBLIC_V4]).reason, /internet access is off/);
  const on = new PolicyMatcher(policy({ internetAccess: true }));
  assert.equal(on.decide("pypi.org", [PUBLIC_V4]).allowed, true);
  assert.equal(on.decide(PUBLIC_V6, [PUBLIC_V6]).allowed, true);
});

test("names and wildcards: a wildcard matches subdomains only; deny wins over allow", () => {
  const m = new PolicyMatcher(policy({ allowOut: ["pypi.org", "*.github.com"], denyOut: ["gist.github.com"] }));
  assert.equal(m.decide("pypi.org", [PUBLIC_V4]).allowed, true);
  assert.equal(m.decide("PYPI.ORG.", [PUBLIC_V4]).allowed, true);
  assert.equal(m.decide("api.github.com", [PUBLIC_V4]).allowed, true);
  assert.equal(m.decide("a.b.github.com", [PUBLIC_V4]).allowed, true);
  assert.equal(m.decide("github.com", [PUBLIC_V4]).allowed, false);
  assert.equal(m.decide("evilgithub.com", [PUBLIC_V4]).allowed, false);
  assert.equal(m.decide("files.pythonhosted.org", [PUBLIC_V4]).allowed, false);
  assert.match(m.decide("gist.github.com", [PUBLIC_V4]).reason, /denied by policy/);
  // A raw IP is not a name in the list.
  assert.equal(m.decide(PUBLIC_V4, [PUBLIC_V4]).allowed, false);
});

test("CIDRs, v4 and v6, including IPv4-mapped IPv6 and a /0 in allow with deny rules", () => {
  const m = new PolicyMatcher(policy({ allowOut: ["0.0.0.0/0"], denyOut: ["93.184.0.0/16", "2606:2800::/32", "blocked.example"] }));
  assert.equal(m.decide("8.8.8.8", ["8.8.8.8"]).allowed, true);
  assert.equal(m.decide("example.org", ["8.8.4.4"]).allowed, true);
  assert.equal(m.decide("example.com", [PUBLIC_V4]).allowed, false, "deny CIDR wins over the /0");
  assert.equal(m.decide("x", [`::ffff:${PUBLIC_V4}`]).allowed, false, "mapped address is the v4 one");
  assert.equal(m.decide("blocked.example", ["8.8.8.8"]).allowed, false);
  assert.equal(m.decide("v6.example", ["2001:4860::8888"]).allowed, false, "a v4 /0 does not allow v6");
  // The /0 never opens the special ranges.
  for (const a of ["127.0.0.1", "169.254.169.254", "10.1.2.3", "192.168.1.1", "172.16.0.1", "224.0.0.1", "0.0.0.0"]) {
    assert.equal(m.decide(a, [a]).allowed, false, a);
  }
  const v6 = new PolicyMatcher(policy({ allowOut: ["2606:2800::/32"] }));
  assert.equal(v6.decide(PUBLIC_V6, [PUBLIC_V6]).allowed, true);
  assert.equal(v6.decide("name.example", [PUBLIC_V6, "2001:4860::8888"]).allowed, false, "every address must be allowed");
});

test("loopback, link-local, private and this host's addresses are refused unless the operator allows them", () => {
  const m = new PolicyMatcher(policy({ internetAccess: true }), [], [], ["203.0.113.7"]);
  for (const a of [
    "127.0.0.1",
    "127.1.2.3",
    "::1",
    "169.254.169.254",
    "fe80::1",
    "fd00::1",
    "::ffff:127.0.0.1",
    "203.0.113.7",
    "100.64.0.1",
  ]) {
    const d = m.decide("rebind.example", [a]);
    assert.equal(d.allowed, false, a);
    assert.match(d.reason, /never reachable/);
  }
  // One bad address among good ones refuses the whole name (the proxy would not pick for it).
  assert.equal(m.decide("mixed.example", [PUBLIC_V4, "127.0.0.1"]).allowed, false);
  const op = new PolicyMatcher(policy({ internetAccess: true }), ["evil.example"], ["10.0.0.0/8"]);
  assert.equal(op.decide("mirror.internal", ["10.2.3.4"]).allowed, true);
  assert.equal(op.decide("x", ["192.168.0.1"]).allowed, false);
  assert.equal(op.decide("evil.example", [PUBLIC_V4]).allowed, false, "the operator's deny list applies");
  // Addresses the operator mapped a name to explicitly are trusted.
  assert.equal(m.decide("pypi.test", ["127.0.0.1"], ["127.0.0.1"]).allowed, true);
});

test("addressKey", () => {
  assert.deepEqual(addressKey("::ffff:1.2.3.4"), { family: 4, bits: 0x01020304n });
  assert.deepEqual(addressKey("::ffff:0102:0304"), { family: 4, bits: 0x01020304n });
  assert.equal(addressKey("nope"), undefined);
});

test("IPv6 forms that carry an IPv4 address, in any spelling, are that address: loopback and private ones refused", () => {
  const m = new PolicyMatcher(policy({ internetAccess: true }));
  for (const a of [
    "::127.0.0.1", // IPv4-compatible
    "::7f00:1",
    "0:0:0:0:0:0:127.0.0.1",
    "::ffff:0:7f00:1", // IPv4-translated (SIIT)
    "::ffff:0:127.0.0.1",
    "0000:0000:0000:0000:ffff:0000:7f00:0001",
    "::FFFF:7F00:1", // IPv4-mapped, upper case
    "::10.1.2.3",
    "::ffff:0:a9fe:a9fe", // 169.254.169.254
    "::ffff:0:c0a8:101", // 192.168.1.1
    "64:ff9b:1::7f00:1", // local-use NAT64
  ]) {
    const d = m.decide(a, [a]);
    assert.equal(d.allowed, false, a);
    assert.match(d.reason, /never reachable/, a);
  }
  assert.deepEqual(addressKey("::127.0.0.1"), { family: 4, bits: 0x7f000001n });
  assert.deepEqual(addressKey("::ffff:0:7f00:1"), { family: 4, bits: 0x7f000001n });
  assert.deepEqual(addressKey("::1"), { family: 6, bits: 1n }, "loopback stays IPv6");
  // The v4 rules apply to them as to the plain address, allow as deny.
  const allow = new PolicyMatcher(policy({ allowOut: [`${PUBLIC_V4}/32`] }));
  assert.equal(allow.decide(`::${PUBLIC_V4}`, [`::${PUBLIC_V4}`]).allowed, true);
  const deny = new PolicyMatcher(policy({ internetAccess: true, denyOut: [`${PUBLIC_V4}/32`] }));
  assert.equal(deny.decide("x", [`::ffff:0:${PUBLIC_V4}`]).allowed, false);
});
