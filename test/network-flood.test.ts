// Hostile egress from inside real sandboxes: floods of connections to the sandbox's egress proxy
// (its unix socket directly, and 127.0.0.1:3128 through its relay), dropped unread, held by the
// thousand, or left behind by a deleted sandbox. The service must stay up, keep serving other
// sandboxes, and hold no more descriptors for a sandbox than its connection cap.
import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, test } from "node:test";
import { type Call, createSandbox, PY_FETCH, pythonStdout } from "./helpers/api.js";
import { type Internet, startInternet } from "./helpers/internet.js";
import { createKey } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

const PER_SANDBOX = 40;
const PER_TENANT = 60;

let server: TestServer;
let internet: Internet;
let call: Call;

before(async () => {
  internet = await startInternet();
  server = await startServer({
    env: {
      AGENTBOX_EGRESS_HOSTS: `pypi.test=127.0.0.1:${internet.port}`,
      AGENTBOX_EGRESS_MAX_CONNECTIONS: String(PER_SANDBOX),
      AGENTBOX_EGRESS_MAX_CONNECTIONS_PER_TENANT: String(PER_TENANT),
    },
  });
  call = client(server);
});

after(async () => {
  await server?.dispose();
  await internet?.close();
});

const run = (id: string, code: string, timeout = 60, c: Call = call) => pythonStdout(c, id, code, timeout);

/**
 * Opens `n` connections to the proxy's socket and `n` to the relay's port, raising the sandbox's
 * own descriptor limit first; holds them `hold` seconds, then closes them without reading a byte.
 */
function flood(n: number, hold: number): string {
  return `
import resource, socket, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for i in range(${n}):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(5); s.connect("/run/agentbox/egress.sock"); held.append(s)
    except OSError:
        pass
    try:
        t = socket.create_connection(("127.0.0.1", 3128), timeout=5); held.append(t)
    except OSError:
        pass
print("held", len(held), flush=True)
time.sleep(${hold})
for s in held:
    s.close()
print("closed")
`;
}

async function alive(): Promise<void> {
  assert.equal(server.process.exitCode, null, `the service exited:\n${server.logs().slice(-3000)}`);
  assert.equal(server.process.signalCode, null, `the service was killed:\n${server.logs().slice(-3000)}`);
  const health = await fetch(`${server.url}/health`);
  assert.equal(health.status, 200);
}

function openFds(): number {
  return fs.readdirSync(`/proc/${server.process.pid}/fd`).length;
}

test("200 proxy connections dropped unread, twice over, leave the service up and other sandboxes working", async () => {
  const bystander = await createSandbox(call);
  const attacker = await createSandbox(call, { network: { allow_out: ["pypi.test"] } });
  for (let round = 0; round < 2; round++) {
    const out = await run(attacker, flood(200, 1), 120).catch((err) => String(err));
    await alive();
    assert.match(out, /closed/, out);
  }
  assert.equal((await run(bystander, "print(6 * 7)")).trim(), "42");
  // The attacker's own egress still works once its connections are gone.
  assert.equal((await run(attacker, `${PY_FETCH}\nprint(fetch("http://pypi.test/after"))`)).trim(), "200 hello from pypi.test /after");
  await call("DELETE", `/v1/agents/sandboxes/${attacker}`);
  await call("DELETE", `/v1/agents/sandboxes/${bystander}`);
});

test("deleting a sandbox that holds thousands of proxy connections leaves the service up", async () => {
  const attacker = await createSandbox(call, { network: { allow_out: ["pypi.test"] } });
  const started = await call("POST", `/v1/agents/sandboxes/${attacker}/commands/run`, {
    command: `python3 -c '${flood(1500, 600).replaceAll("'", "'\\''")}' > held.txt`,
    background: true,
  });
  assert.ok(started.status < 300, JSON.stringify(started.body));
  for (let i = 0; i < 240; i++) {
    const held = await call<{ exit_code: number; stdout: string }>("POST", `/v1/agents/sandboxes/${attacker}/commands/run`, {
      command: "cat held.txt",
    });
    if (/held/.test(held.body.stdout)) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const del = await call("DELETE", `/v1/agents/sandboxes/${attacker}`);
  assert.ok(del.status < 300, JSON.stringify(del.body));
  await new Promise((r) => setTimeout(r, 1000));
  await alive();
  const other = await createSandbox(call);
  assert.equal((await run(other, "print('still here')")).trim(), "still here");
  await call("DELETE", `/v1/agents/sandboxes/${other}`);
});

test("thousands of held proxy connections cost the service no more descriptors than the caps", async (t) => {
  const tenant = createKey(server.dataDir, "flood-tenant", "tenant-flood");
  const tenantCall = client({ url: server.url, key: tenant.key });
  const a = await createSandbox(tenantCall, { network: { allow_out: ["pypi.test"] } });
  const b = await createSandbox(tenantCall, { network: { allow_out: ["pypi.test"] } });
  await new Promise((r) => setTimeout(r, 500));
  const baseline = openFds();
  let peak = baseline;
  let running = true;
  const poll = (async () => {
    while (running) {
      try {
        peak = Math.max(peak, openFds());
      } catch {
        // the service is gone: alive() below says so
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  // Two sandboxes of one tenant, 3000 connections each, held for a few seconds.
  const runs = await Promise.all([
    run(a, flood(1500, 4), 120, tenantCall).catch((err) => String(err)),
    run(b, flood(1500, 4), 120, tenantCall).catch((err) => String(err)),
  ]);
  running = false;
  await poll;
  await alive();
  for (const out of runs) {
    assert.match(out, /held \d+\nclosed/, out);
    // The sandboxes really held thousands (the refused ones are closed on the service's side only).
    assert.ok(Number(/held (\d+)/.exec(out)?.[1]) >= 2000, out);
  }
  t.diagnostic(`descriptors: ${baseline} before, ${peak} at the peak`);
  // Each admitted connection is one descriptor (no upstream: they never sent a request); the
  // tenant's cap bounds both sandboxes together. The margin covers the service's other work.
  const margin = 100;
  assert.ok(peak - baseline <= PER_TENANT + margin, `the service's descriptors went from ${baseline} to ${peak}`);
  // Egress works again once the flood is gone.
  assert.equal(
    (await run(a, `${PY_FETCH}\nprint(fetch("http://pypi.test/again"))`, 60, tenantCall)).trim(),
    "200 hello from pypi.test /again",
  );
  await tenantCall("DELETE", `/v1/agents/sandboxes/${a}`);
  await tenantCall("DELETE", `/v1/agents/sandboxes/${b}`);
});
