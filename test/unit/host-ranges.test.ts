// This host's own networks (interface subnets, gateways) are never reachable, for egress and for
// webhooks alike, whatever range they are in; and egress looks up only names its policy could allow.
import assert from "node:assert/strict";
import type os from "node:os";
import { test } from "node:test";
import { privateAddressCheck } from "../../src/events/destination.js";
import { hostRanges, ipv4Gateways, ipv6Gateways } from "../../src/network/host-ranges.js";
import { type NetworkPolicy, PolicyMatcher } from "../../src/network/policy.js";

const policy = (p: Partial<NetworkPolicy>): NetworkPolicy => ({ internetAccess: false, allowOut: [], denyOut: [], ...p });

/** A host on a public /24 (203.0.113.0/24, gateway .1) and a global IPv6 /64 (gateway ::1 of it). */
const iface = (address: string, cidr: string, family: "IPv4" | "IPv6"): os.NetworkInterfaceInfo =>
  ({ address, cidr, family, netmask: "", mac: "00:00:00:00:00:00", internal: false, scopeid: 0 }) as os.NetworkInterfaceInfo;
const INTERFACES = {
  eth0: [iface("203.0.113.10", "203.0.113.10/24", "IPv4"), iface("2001:db8:5:6::10", "2001:db8:5:6::10/64", "IPv6")],
  tun0: [iface("198.51.100.7", "198.51.100.7/0", "IPv4")],
};
const ROUTE = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t017100CB\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t007100CB\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
`;
const ROUTE6 = `20010db8000500060000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 20010db8000500ff0000000000000001 00000400 00000002 00000000 00000003     eth0
`;

test("the host's ranges: its addresses, their subnets (not wider than /8 or /32), and its gateways", () => {
  assert.deepEqual(ipv4Gateways(ROUTE), ["203.0.113.1"]);
  assert.deepEqual(ipv6Gateways(ROUTE6), ["2001:0db8:0005:00ff:0000:0000:0000:0001"]);
  const ranges = hostRanges(INTERFACES, ROUTE, ROUTE6);
  assert.deepEqual(ranges.sort(), [
    "198.51.100.7/32",
    "2001:db8:5:6::/64",
    "2001:db8:5:6::10/128",
    "2001:db8:5:ff::1/128",
    "203.0.113.0/24",
    "203.0.113.1/32",
    "203.0.113.10/32",
  ]);
  assert.deepEqual(hostRanges({}, "", ""), []);
});

test("egress refuses the host's public subnet and gateways; neighbours outside them stay reachable", () => {
  const ranges = hostRanges(INTERFACES, ROUTE, ROUTE6);
  const m = new PolicyMatcher(policy({ internetAccess: true }), [], [], ranges);
  for (const a of ["203.0.113.1", "203.0.113.10", "203.0.113.200", "2001:db8:5:6::1", "2001:db8:5:ff::1", "198.51.100.7"]) {
    const d = m.decide("neighbour.example", [a]);
    assert.equal(d.allowed, false, a);
    assert.match(d.reason, /never reachable/);
  }
  for (const a of ["203.0.114.1", "198.51.100.8", "2001:db8:5:7::1"]) assert.equal(m.decide("far.example", [a]).allowed, true, a);
  // The operator can still open one of them on purpose.
  const op = new PolicyMatcher(policy({ internetAccess: true }), [], ["203.0.113.0/24"], ranges);
  assert.equal(op.decide("mirror.example", ["203.0.113.50"]).allowed, true);
});

test("webhooks refuse the host's public subnet and gateways too", () => {
  const isPrivate = privateAddressCheck(hostRanges(INTERFACES, ROUTE, ROUTE6));
  for (const a of ["203.0.113.1", "203.0.113.77", "::ffff:203.0.113.1", "2001:db8:5:6::99", "2001:db8:5:ff::1", "127.0.0.1", "10.0.0.1"]) {
    assert.equal(isPrivate(a), true, a);
  }
  for (const a of ["203.0.114.1", "8.8.8.8", "2001:db8:5:7::1"]) assert.equal(isPrivate(a), false, a);
});

test("with an allow list, only names it lists are looked up; address ranges admit IP literals and operator-mapped names", () => {
  const ranges = new PolicyMatcher(policy({ allowOut: ["8.8.8.0/24"] }));
  const refused = ranges.decideByName("c2VjcmV0.exfil.example");
  assert.equal(refused?.allowed, false, "a name outside the list is refused before any lookup");
  assert.match(refused?.reason ?? "", /^not in allow_out/);
  assert.equal(ranges.decideByName("8.8.8.8"), undefined, "an IP literal goes on to the address check");
  assert.equal(ranges.decideByName("mirror.test", true), undefined, "a name the operator mapped asks no DNS server");
  const mixed = new PolicyMatcher(policy({ allowOut: ["pypi.org", "*.github.com", "8.8.8.0/24"] }));
  assert.equal(mixed.decideByName("pypi.org"), undefined);
  assert.equal(mixed.decideByName("api.github.com"), undefined);
  assert.equal(mixed.decideByName("pypi.org.exfil.example")?.allowed, false);
  const names = new PolicyMatcher(policy({ allowOut: ["pypi.org"] }));
  assert.equal(names.decideByName("other.example", true)?.reason, "not in allow_out", "no ranges: mapped or not, refused");
  // Internet access without an allow list: any name may be looked up (it may be reached anyway).
  assert.equal(new PolicyMatcher(policy({ internetAccess: true })).decideByName("anything.example"), undefined);
  assert.equal(new PolicyMatcher(policy({})).decideByName("anything.example")?.allowed, false);
});

test("the host's addresses in an IPv6 form carrying IPv4 (compatible, mapped, translated) are refused as the IPv4 ones", () => {
  const ranges = hostRanges(INTERFACES, ROUTE, ROUTE6);
  const m = new PolicyMatcher(policy({ internetAccess: true }), [], [], ranges);
  const isPrivate = privateAddressCheck(ranges);
  for (const a of ["::203.0.113.10", "::ffff:0:203.0.113.1", "::ffff:cb00:7101", "::cb00:71c8", "::127.0.0.1", "::ffff:0:7f00:1"]) {
    assert.equal(m.decide(a, [a]).allowed, false, a);
    assert.equal(isPrivate(a), true, a);
  }
  // An interface given in the mapped form counts as its IPv4 address and subnet (the prefix less 96).
  assert.deepEqual(hostRanges({ eth1: [iface("::ffff:198.51.100.9", "::ffff:198.51.100.9/120", "IPv6")] }, "", "").sort(), [
    "198.51.100.0/24",
    "198.51.100.9/32",
  ]);
});
