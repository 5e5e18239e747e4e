// A private network on this machine for multi-node tests: a bridge in the test's own namespace and
// one network namespace per node, each joined to the bridge by a veth pair and given its own
// address, so that nodes talk to each other (and to Redis on the bridge's address) over a real
// link rather than loopback. Everything is made by the test and removed by dispose().
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";

export interface NodeNetwork {
  /** The namespace's name (under /run/netns): run a process in it with `nsenter --net=<path>`. */
  name: string;
  path: string;
  /** The node's address on the bridge. */
  address: string;
}

export interface PrivateNetwork {
  /** The bridge's address in the test's own namespace: what the nodes reach the test's services at. */
  gateway: string;
  nodes: NodeNetwork[];
  /** The command prefix that runs a program in node `i`'s namespace only (no other namespace changes). */
  enter(i: number): string[];
  dispose(): void;
}

const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });

/** A /24 in 10.250–254.x.0 that no interface of this machine uses. */
function freeSubnet(): string {
  const used = execFileSync("ip", ["-4", "-o", "addr"], { encoding: "utf8" });
  for (;;) {
    const net = `10.${250 + crypto.randomInt(5)}.${crypto.randomInt(256)}`;
    if (!used.includes(` ${net}.`)) return net;
  }
}

export function makeNetwork(count: number): PrivateNetwork {
  const tag = crypto.randomBytes(3).toString("hex");
  const subnet = freeSubnet();
  const bridge = `abxbr${tag}`;
  const gateway = `${subnet}.1`;
  const nodes: NodeNetwork[] = [];
  const dispose = () => {
    for (const n of nodes) {
      try {
        ip("netns", "delete", n.name);
      } catch {
        // already gone
      }
    }
    try {
      ip("link", "delete", bridge);
    } catch {
      // already gone
    }
  };
  try {
    ip("link", "add", bridge, "type", "bridge");
    ip("addr", "add", `${gateway}/24`, "dev", bridge);
    ip("link", "set", bridge, "up");
    for (let i = 0; i < count; i++) {
      const name = `abx-${tag}-${i}`;
      const address = `${subnet}.${i + 2}`;
      const outside = `abxv${tag}${i}`;
      nodes.push({ name, path: `/run/netns/${name}`, address });
      ip("netns", "add", name);
      ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", name);
      ip("link", "set", outside, "master", bridge);
      ip("link", "set", outside, "up");
      ip("-n", name, "addr", "add", `${address}/24`, "dev", "eth0");
      ip("-n", name, "link", "set", "eth0", "up");
      ip("-n", name, "link", "set", "lo", "up");
    }
  } catch (err) {
    dispose();
    throw err;
  }
  return {
    gateway,
    nodes,
    enter: (i) => ["nsenter", `--net=${(nodes[i] as NodeNetwork).path}`, "--"],
    dispose,
  };
}
