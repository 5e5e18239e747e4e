// End to end: connection limits. One address (127.0.0.2) opens 2,000 sockets that send headers
// slowly, a line every second, never finishing; meanwhile an authenticated client on 127.0.0.1
// gets prompt answers on fresh connections. The address holds at most its share (the rest are
// closed at once) and every slow socket is closed within the header timeout plus a second or two.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { addressKey } from "../src/api/connections.js";
import { startServer, type TestServer } from "./helpers/server.js";

const HEADER_TIMEOUT_MS = 3000;
const PER_ADDRESS = 200;
const TOTAL = 1000;
const ATTACK_SOCKETS = 2000;

let server: TestServer;

before(async () => {
  server = await startServer({
    env: {
      AGENTBOX_HEADER_TIMEOUT_MS: String(HEADER_TIMEOUT_MS),
      AGENTBOX_MAX_CONNECTIONS: String(TOTAL),
      AGENTBOX_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
    },
  });
});

after(async () => {
  await server?.dispose();
});

interface Slow {
  socket: net.Socket;
  openedAt: number;
  closedAt?: number;
  /** Whether the server ever accepted bytes from it long enough to answer (a 408) */
  answered: boolean;
}

/** Opens a socket from 127.0.0.2 and starts a request whose headers never end. */
function slowSocket(port: number): Promise<Slow> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress: "127.0.0.2" });
    const slow: Slow = { socket, openedAt: Date.now(), answered: false };
    socket.on("error", () => {});
    socket.on("data", () => {
      slow.answered = true;
    });
    socket.on("close", () => {
      slow.closedAt = Date.now();
      resolve(slow);
    });
    socket.on("connect", () => {
      slow.openedAt = Date.now();
      socket.write("GET /v1/agents/sandboxes HTTP/1.1\r\nHost: x\r\n");
      resolve(slow);
    });
  });
}

/** A GET on a fresh connection (from 127.0.0.1 unless told) with the tenant key: status and time taken. */
function freshGet(path: string, localAddress = "127.0.0.1"): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${server.url}${path}`,
      { agent: false, localAddress, headers: { authorization: `Bearer ${server.key}` }, timeout: 10_000 },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
  });
}

/**
 * Connections the service holds open, by its own gauge, less the one that asks and any earlier
 * asking connection it has not yet seen close (at most one: each waits for its socket's close).
 */
async function heldConnections(): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    let body = "";
    const req = http.get(`${server.url}/metrics`, { agent: false, timeout: 10_000 }, (res) => {
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
    });
    // Resolved once this side's socket is closed, which is after the whole answer was read.
    req.on("socket", (socket) => socket.once("close", () => resolve(body)));
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
  });
  const open = Number(/^agentbox_open_connections (\d+)$/m.exec(text)?.[1]);
  assert.ok(Number.isInteger(open), "the service reports its open connections");
  return Math.max(0, open - 2);
}

describe("connection limits", () => {
  test("the counting key: IPv4 as is, IPv4-mapped unwrapped, IPv6 by its /64", () => {
    assert.equal(addressKey("127.0.0.2"), "127.0.0.2");
    assert.equal(addressKey("::ffff:10.1.2.3"), "10.1.2.3");
    assert.equal(addressKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
    assert.equal(addressKey("2001:0db8:0001:0002:ffff:0:0:9"), "2001:db8:1:2::/64");
    assert.equal(addressKey("::1"), "0:0:0:0::/64");
    assert.equal(addressKey(undefined), "unknown");
  });

  test(`${ATTACK_SOCKETS} slow-header sockets from one address: capped, closed in time, others served`, { timeout: 60_000 }, async () => {
    const sockets: Slow[] = [];
    // Keep the slow sockets "alive" the way a slowloris client does: a header line every second.
    const drip = setInterval(() => {
      for (const s of sockets) if (s.closedAt === undefined) s.socket.write("X-Slow: 1\r\n");
    }, 1000);
    try {
      // The open count is the service's own, taken after every batch: on a busy machine opening all
      // of them can take longer than the header timeout, so the first accepted ones may already be
      // closed at the end; and a refused socket's close can reach this side well after the service
      // closed it, so counting sockets here over-counts.
      let mostOpen = 0;
      for (let i = 0; i < ATTACK_SOCKETS; i += 200) {
        sockets.push(...(await Promise.all(Array.from({ length: 200 }, () => slowSocket(server.port)))));
        mostOpen = Math.max(mostOpen, await heldConnections());
      }
      assert.ok(mostOpen > 0, "some slow sockets were accepted");
      assert.ok(mostOpen <= PER_ADDRESS, `${mostOpen} sockets from one address were open at once; the cap is ${PER_ADDRESS}`);

      // The other client: fresh connections, prompt answers, while the slow sockets are held.
      const times: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await freshGet("/v1/agents/sandboxes");
        assert.equal(res.status, 200);
        times.push(res.ms);
      }
      times.sort((a, b) => a - b);
      // Served while the slow sockets are still held, not after they time out (a busy machine
      // may take a while for one answer, but never the header timeout).
      assert.ok((times.at(-1) as number) < HEADER_TIMEOUT_MS, `slowest answer ${times.at(-1)} ms`);

      // Every slow socket is closed within the header timeout and the check interval (+ slack).
      const bound = HEADER_TIMEOUT_MS + 2000;
      const deadline = Math.max(...sockets.map((s) => s.openedAt)) + bound;
      while (Date.now() < deadline && sockets.some((s) => s.closedAt === undefined)) await new Promise((r) => setTimeout(r, 100));
      const stillOpen = sockets.filter((s) => s.closedAt === undefined).length;
      assert.equal(stillOpen, 0, `${stillOpen} slow sockets still open ${bound} ms after they connected`);
      const lifetimes = sockets.map((s) => (s.closedAt as number) - s.openedAt);
      assert.ok(Math.max(...lifetimes) <= bound, `a slow socket lived ${Math.max(...lifetimes)} ms`);
      // The ones the service held were told why: a 408 in the error envelope.
      assert.ok(sockets.some((s) => s.answered));
    } finally {
      clearInterval(drip);
      for (const s of sockets) s.socket.destroy();
    }
    // And the address can connect again once its sockets are gone.
    assert.equal((await freshGet("/health", "127.0.0.2")).status, 200);
    // Operators see the refusals.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const refused = Number(/^agentbox_connections_refused_total\{reason="per_address"\} (\d+)$/m.exec(metrics)?.[1]);
    // Each slow socket was either refused at once or held and answered 408 at the header timeout;
    // on a slow machine the first held ones time out while later ones connect, so more are held.
    const held = sockets.filter((s) => s.answered).length;
    assert.ok(refused > 0 && refused >= ATTACK_SOCKETS - held - PER_ADDRESS, `refused ${refused}, held and answered ${held}`);
    assert.match(metrics, /^agentbox_open_connections \d+$/m);
  });
});
