// The headers of the service's own channel between nodes (x-agentbox-node, -node-time, -node-sig,
// x-agentbox-origin-host and any other x-agentbox-* one): set only by a node that forwards a
// request, so one a client sent is dropped at the public edge (a forwarding node sends only its
// own), and none reaches a sandbox's server (a signature seen there could be replayed).

/** The prefix every internal channel header's name begins with. */
const INTERNAL_PREFIX = "x-agentbox-";

/** Whether `name` (lower case, as node:http parses names) is an internal channel header. */
export function isInternalHeader(name: string): boolean {
  return name.startsWith(INTERNAL_PREFIX);
}
