// Shared by the E2B-compatible API's tests: a service the official SDKs reach through their
// environment variables alone, the sandboxes a file made (killed after it), and waiting for a
// watch event.
import assert from "node:assert/strict";
import { after, before } from "node:test";
import { Sandbox } from "e2b";
import { type ServerOptions, startServer, type TestServer } from "./server.js";

/**
 * Starts the service before the file's tests and points E2B_API_URL, E2B_SANDBOX_URL and
 * E2B_API_KEY at it; after them, kills every sandbox pushed onto `sandboxes` and stops it.
 */
export function e2bService(opts: ServerOptions = {}): { server: TestServer; sandboxes: string[] } {
  // `server` is set by before(), which runs ahead of every test that reads it.
  const ctx = { server: undefined as unknown as TestServer, sandboxes: [] as string[] };
  before(async () => {
    ctx.server = await startServer(opts);
    process.env.E2B_API_URL = `${ctx.server.url}/e2b`;
    process.env.E2B_SANDBOX_URL = `${ctx.server.url}/e2b`;
    process.env.E2B_API_KEY = ctx.server.key;
  });
  after(async () => {
    for (const id of ctx.sandboxes) await Sandbox.kill(id).catch(() => {});
    await ctx.server?.dispose();
  });
  return ctx;
}

/** One Connect unary call of envd's filesystem service into sandbox `id`, with the headers E2B's Python SDK sends. */
export async function filesystemRpc(
  server: TestServer,
  id: string,
  method: string,
  message: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/e2b/filesystem.Filesystem/${method}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "connect-protocol-version": "1",
      "connect-timeout-ms": "60000",
      "keepalive-ping-interval": "50",
      "x-access-token": server.key,
      "e2b-sandbox-id": id,
      "e2b-sandbox-port": "49983",
    },
    body: JSON.stringify(message),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export interface WatchEvent {
  name: string;
  type: string;
}

/** Waits (up to 15 s: watches poll) until `events` holds one of `name` and `type`; fails otherwise. */
export async function seenEvent(events: WatchEvent[], name: string, type: string): Promise<void> {
  const has = () => events.some((e) => e.name === name && e.type === type);
  for (let i = 0; i < 150 && !has(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(has(), `${type} ${name} in ${JSON.stringify(events)}`);
}
