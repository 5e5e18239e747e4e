// Egress end to end: real sandboxes reach "the internet" (a server on loopback that the resolver
// override maps test names to) only through the host's proxy and only where their policy allows;
// everything else is refused with a clear error inside the sandbox and a log entry.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { assertError, type Call, createSandbox, PY_FETCH, pythonStdout } from "./helpers/api.js";
import { type Internet, selfSignedCert, startInternet } from "./helpers/internet.js";
import { createKey } from "./helpers/leftovers.js";
import { client, startServer, type TestServer, testCluster } from "./helpers/server.js";

let server: TestServer;
let internet: Internet;
let secure: Internet;
let cert: string;
let call: Call;

let env: Record<string, string>;

before(async () => {
  internet = await startInternet();
  const tls = selfSignedCert("secure.test");
  cert = tls.cert;
  secure = await startInternet(tls);
  const at = `127.0.0.1:${internet.port}`;
  env = { AGENTBOX_EGRESS_HOSTS: `pypi.test=${at},other.test=${at},npm.test=${at},secure.test=127.0.0.1:${secure.port}` };
  server = await startServer({ env });
  call = client(server);
});

after(async () => {
  await server?.dispose();
  await internet?.close();
  await secure?.close();
});

const py = (id: string, code: string) => pythonStdout(call, id, code);

/** `viaProxyOnly`: no NO_PROXY exceptions, so that loopback URLs go to the proxy too (as hostile code would send them). */
async function fetchAll(id: string, urls: string[], viaProxyOnly = false): Promise<string[]> {
  const unset = viaProxyOnly ? 'import os\nos.environ.pop("no_proxy", None)\nos.environ.pop("NO_PROXY", None)\n' : "";
  const out = await py(id, `${unset}${PY_FETCH}\nfor u in ${JSON.stringify(urls)}:\n    print(fetch(u))`);
  return out.trim().split("\n");
}

interface LogEntry {
  host: string;
  port: number;
  address: string | null;
  allowed: boolean;
  reason: string;
  bytes_in: number;
  bytes_out: number;
}

async function egressLog(id: string): Promise<LogEntry[]> {
  const res = await call<{ entries: LogEntry[] }>("GET", `/v1/agents/sandboxes/${id}/network/log`);
  assert.equal(res.status, 200);
  return res.body.entries;
}

test("a default sandbox has no egress at all: no proxy settings, no relay, no route out", async () => {
  const id = await createSandbox(call);
  const policy = await call("GET", `/v1/agents/sandboxes/${id}/network`);
  assert.deepEqual(policy.body, { internet_access: false, allow_out: [], deny_out: [] });
  const out = await py(
    id,
    `import os, socket
print(sorted(k for k in os.environ if "proxy" in k.lower()))
for addr in [("127.0.0.1", 3128), ("127.0.0.1", ${internet.port}), ("10.0.0.1", 80)]:
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect(addr); print("CONNECTED", addr)
    except OSError as e:
        print("refused", type(e).__name__)
try:
    socket.getaddrinfo("pypi.test", 80); print("RESOLVED")
except OSError:
    print("no dns")
import ssl
print("ca certificates", ssl.create_default_context().cert_store_stats()["x509_ca"] > 50)`,
  );
  const lines = out.trim().split("\n");
  assert.equal(lines[0], "[]");
  assert.ok(!out.includes("CONNECTED"), out);
  assert.ok(!out.includes("RESOLVED"), out);
  // The public CA certificates are there for when egress is on (HTTPS verification).
  assert.match(out, /ca certificates True/);
  assert.deepEqual(await egressLog(id), []);
  await call("DELETE", `/v1/agents/sandboxes/${id}`);
});

test("allow list: the allowed name works (HTTP and CONNECT), everything else is refused and logged; a policy change applies at once", async () => {
  const id = await createSandbox(call, { network: { allow_out: ["pypi.test"] } });
  assert.deepEqual((await call("GET", `/v1/agents/sandboxes/${id}/network`)).body, {
    internet_access: false,
    allow_out: ["pypi.test"],
    deny_out: [],
  });
  const [ok, other, rawIp] = await fetchAll(id, ["http://pypi.test/hello", "http://other.test/hello", "http://93.184.216.34/"]);
  assert.equal(ok, "200 hello from pypi.test /hello");
  assert.equal(other, "403 agentbox egress: other.test:80 not in allow_out");
  assert.equal(rawIp, "403 agentbox egress: 93.184.216.34:80 not in allow_out");
  // CONNECT (what HTTPS uses): a tunnel to the allowed name; refused elsewhere with the reason in the status line.
  const tunnel = await py(
    id,
    `import socket
def tunnel(target):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(b"CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % (target.encode(), target.encode()))
    status = s.recv(4096).split(b"\\r\\n")[0].decode()
    if " 200 " in status:
        s.sendall(b"GET /tunnel HTTP/1.0\\r\\nHost: pypi.test\\r\\n\\r\\n")
        data = b""
        while True:
            part = s.recv(4096)
            if not part: break
            data += part
        status += " | " + data.split(b"\\r\\n\\r\\n", 1)[1].decode()
    return status
print(tunnel("pypi.test:443"))
print(tunnel("other.test:443"))
# What a hostile program sends the proxy instead of a proxy request.
for junk in (b"GARBAGE\\r\\n\\r\\n", b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n", b"CONNECT pypi.test:99999 HTTP/1.1\\r\\n\\r\\n", b"X" * 20000):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(junk)
    print(s.recv(4096).split(b"\\r\\n")[0].decode())`,
  );
  const [t1, t2, ...junk] = tunnel.trim().split("\n");
  assert.deepEqual(junk, [
    "HTTP/1.1 400 agentbox egress: malformed proxy request",
    "HTTP/1.1 400 agentbox egress: this is a proxy: requests need an absolute http:// URL or CONNECT",
    "HTTP/1.1 400 agentbox egress: CONNECT needs host:port, got 'pypi.test:99999'",
    "HTTP/1.1 400 agentbox egress: malformed proxy request",
  ]);
  assert.equal(t1, "HTTP/1.1 200 Connection established | hello from pypi.test /tunnel");
  assert.equal(t2, "HTTP/1.1 403 agentbox egress: other.test:443 not in allow_out");
  const log = await egressLog(id);
  const byHost = (h: string) => log.filter((e) => e.host === h);
  assert.equal(byHost("pypi.test").length, 2);
  assert.ok(byHost("pypi.test").every((e) => e.allowed && e.address === "127.0.0.1" && e.bytes_in > 0 && e.bytes_out > 0));
  assert.deepEqual(
    byHost("other.test").map((e) => [e.allowed, e.port]),
    [
      [false, 80],
      [false, 443],
    ],
  );
  assert.equal(byHost("93.184.216.34")[0]?.allowed, false);
  // The proxy's bytes are the sandbox's network traffic.
  const metrics = await call<{ network_rx: number; network_tx: number }>("GET", `/v1/agents/sandboxes/${id}/metrics`);
  assert.ok(metrics.body.network_rx >= log.reduce((n, e) => n + e.bytes_in, 0));

  // Internet on, pypi.test denied: the next connection follows the new policy.
  const put = await call("PUT", `/v1/agents/sandboxes/${id}/network`, { internet_access: true, allow_out: [], deny_out: ["pypi.test"] });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.deepEqual(put.body, { internet_access: true, allow_out: [], deny_out: ["pypi.test"] });
  const after = await fetchAll(
    id,
    [
      "http://pypi.test/hello",
      "http://other.test/again",
      `http://127.0.0.1:${internet.port}/`,
      `http://localhost:${internet.port}/`,
      "http://169.254.169.254/latest/meta-data/",
      `http://[::1]:${server.port}/health`,
    ],
    true,
  );
  assert.equal(after[0], "403 agentbox egress: pypi.test:80 denied by policy");
  assert.equal(after[1], "200 hello from other.test /again");
  assert.match(
    after[2] as string,
    /^403 agentbox egress: 127\.0\.0\.1:\d+ address 127\.0\.0\.1 is loopback, link-local, private or this host's/,
  );
  assert.match(
    after[3] as string,
    /^403 agentbox egress: localhost:\d+ address (127\.0\.0\.1|::1) is loopback/,
    "a name resolving to loopback",
  );
  assert.match(after[4] as string, /^403 agentbox egress: 169\.254\.169\.254:80 address 169\.254\.169\.254 is loopback, link-local/);
  assert.match(after[5] as string, /^403 agentbox egress: ::1:\d+ address ::1 is loopback/);
  const log2 = (await egressLog(id)).slice(log.length);
  assert.deepEqual(
    log2.map((e) => [e.host, e.allowed]),
    [
      ["pypi.test", false],
      ["other.test", true],
      ["127.0.0.1", false],
      ["localhost", false],
      ["169.254.169.254", false],
      ["::1", false],
    ],
  );
  assert.ok(!internet.hits.includes("/"), "no refused request reached the server");
  await call("DELETE", `/v1/agents/sandboxes/${id}`);
});

test("HTTPS through CONNECT, with the certificate verified end to end", async () => {
  const id = await createSandbox(call, { network: { allow_out: ["secure.test"] } });
  const write = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, {
    language: "python",
    code: `open("/home/user/ca.pem", "w").write(${JSON.stringify(cert)})`,
  });
  assert.equal(write.status, 200);
  const out = await py(
    id,
    `import ssl, urllib.request
ctx = ssl.create_default_context(cafile="/home/user/ca.pem")
print(urllib.request.urlopen("https://secure.test/tls", context=ctx, timeout=20).read().decode())
try:
    urllib.request.urlopen("https://secure.test/tls", timeout=20)
except Exception as e:
    print("unverified:", "CERTIFICATE_VERIFY_FAILED" in str(e))`,
  );
  assert.deepEqual(out.trim().split("\n"), ["hello from secure.test /tls", "unverified: True"]);
  assert.ok(secure.hits.includes("/tls"));
  await call("DELETE", `/v1/agents/sandboxes/${id}`);
});

test("pip install and npm install from allowed registries work through the proxy", async () => {
  const id = await createSandbox(call, { network: { allow_out: ["pypi.test", "npm.test"] } });
  const res = await call<{ exit_code: number; stdout: string; stderr: string }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
    command:
      "env | grep -E '^(PIP_PROXY|npm_config_proxy|npm_config_https_proxy|HTTPS_PROXY|NO_PROXY)=' | sort && PIP_DISABLE_PIP_VERSION_CHECK=1 pip install --user --break-system-packages --no-cache-dir --index-url http://pypi.test/simple/ --trusted-host pypi.test tinypkg && python3 -c 'import tinypkg; print(\"VALUE\", tinypkg.VALUE)'",
    timeout: 120_000,
  });
  assert.equal(res.body.exit_code, 0, res.body.stderr);
  assert.match(res.body.stdout, /VALUE 42/);
  // pip's and npm's own proxy settings are there too.
  for (const v of ["HTTPS_PROXY", "PIP_PROXY", "npm_config_https_proxy", "npm_config_proxy"]) {
    assert.ok(res.body.stdout.includes(`${v}=http://127.0.0.1:3128\n`), v);
  }
  assert.ok(res.body.stdout.includes("NO_PROXY=localhost,127.0.0.1,::1\n"));
  assert.ok(internet.hits.includes("/files/tinypkg-0.1-py3-none-any.whl"));
  const npm = await call<{ exit_code: number; stdout: string; stderr: string }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
    command:
      'mkdir -p app && cd app && npm install --registry http://npm.test/ --no-audit --no-fund --no-update-notifier --loglevel=error tinynpm && node -e \'console.log("npm value", require("tinynpm").value)\'',
    timeout: 120_000,
  });
  assert.equal(npm.body.exit_code, 0, npm.body.stderr);
  assert.match(npm.body.stdout, /npm value 42/);
  // Code in the sandbox kills the relay: the service starts a new one, egress comes back.
  const kill = await call<{ exit_code: number }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "pkill -f netrelay.py" });
  assert.equal(kill.body.exit_code, 0);
  let again = "";
  for (let i = 0; i < 40 && !again.startsWith("200"); i++) {
    await new Promise((r) => setTimeout(r, 250));
    [again = ""] = await fetchAll(id, ["http://pypi.test/again"]);
  }
  assert.equal(again, "200 hello from pypi.test /again");
  await call("DELETE", `/v1/agents/sandboxes/${id}`);
});

test("malformed policies are a 400 and create nothing; another tenant's sandbox is a 404", async () => {
  const before = (await call<{ total: number }>("GET", "/v1/agents/sandboxes")).body.total;
  for (const network of [
    { allow_out: ["not a domain"] },
    { deny_out: ["10.0.0.1/8"] },
    { allow_out: "pypi.test" },
    { allow_out: ["*"] },
    { bogus: [] },
  ]) {
    assertError(await call("POST", "/v1/agents/sandboxes", { network }), 400, "invalid_request");
  }
  assertError(await call("POST", "/v1/agents/sandboxes", { internet_access: "yes" }), 400, "invalid_request");
  assertError(
    await call("POST", "/v1/agents/sandboxes", { network: { allow_out: Array.from({ length: 257 }, (_, i) => `h${i}.test`) } }),
    400,
    "invalid_request",
  );
  assert.equal((await call<{ total: number }>("GET", "/v1/agents/sandboxes")).body.total, before);

  // A /0 in allow with deny rules: everything public but the denied; never the special ranges.
  const id = await createSandbox(call, { network: { allow_out: ["0.0.0.0/0"], deny_out: ["other.test"] } });
  const r = await fetchAll(id, ["http://pypi.test/zero", "http://other.test/zero", "http://10.1.2.3/"]);
  assert.equal(r[0], "200 hello from pypi.test /zero");
  assert.equal(r[1], "403 agentbox egress: other.test:80 denied by policy");
  assert.match(r[2] as string, /^403 agentbox egress: 10\.1\.2\.3:80 address 10\.1\.2\.3 is loopback, link-local, private/);
  assertError(await call("PUT", `/v1/agents/sandboxes/${id}/network`, { allow_out: ["bad..name"] }), 400, "invalid_request");

  const other = createKey(server.dataDir, "network-other", "tenant-network-other");
  const otherCall = client({ url: server.url, key: other.key });
  assertError(await otherCall("GET", `/v1/agents/sandboxes/${id}/network`), 404, "sandbox_not_found");
  assertError(await otherCall("PUT", `/v1/agents/sandboxes/${id}/network`, { internet_access: true }), 404, "sandbox_not_found");
  assertError(await otherCall("GET", `/v1/agents/sandboxes/${id}/network/log`), 404, "sandbox_not_found");
  await call("DELETE", `/v1/agents/sandboxes/${id}`);
});

test("an address-range allow list admits IP addresses only: other names are refused without being looked up", async () => {
  const id = await createSandbox(call, { network: { allow_out: ["203.0.113.0/24"] } });
  // A lookup would carry the name's labels out to whoever answers for its domain.
  const r = await fetchAll(id, ["http://c2vjcmv0.leak.invalid/", `http://localhost:${internet.port}/`, "http://pypi.test/mapped"], true);
  for (const [i, host] of ["c2vjcmv0.leak.invalid:80", `localhost:${internet.port}`].entries()) {
    assert.equal(
      r[i],
      `403 agentbox egress: ${host} not in allow_out (its address ranges admit IP addresses; names are looked up only if listed)`,
    );
  }
  // A name the operator mapped asks no DNS server: it is checked by its address (outside the range here).
  assert.equal(r[2], "403 agentbox egress: pypi.test:80 not in allow_out");
  const log = await egressLog(id);
  assert.deepEqual(
    log.map((e) => [e.host, e.address]),
    [
      ["c2vjcmv0.leak.invalid", null],
      ["localhost", null],
      ["pypi.test", "127.0.0.1"],
    ],
  );
  await call("DELETE", `/v1/agents/sandboxes/${id}`);
});

test("a restarted service gives a re-adopted sandbox its policy and egress back; an ended sandbox leaves no socket directory", async () => {
  const id = await createSandbox(call, { network: { allow_out: ["pypi.test"], deny_out: ["10.0.0.0/8"] } });
  const gone = await createSandbox(call, { internet_access: true });
  const netRoot = `${server.workspaceDir}.net`;
  // In a cluster the socket directory is the owning executor's, beside that node's own workspace dir.
  if (!testCluster) assert.ok(fs.existsSync(path.join(netRoot, gone, "egress.sock")));
  await call("DELETE", `/v1/agents/sandboxes/${gone}`);
  if (!testCluster) assert.ok(!fs.existsSync(path.join(netRoot, gone)));
  await server.stop();
  server = await startServer({ dataDir: server.dataDir, key: server.key, env });
  call = client(server);
  const policy = await call("GET", `/v1/agents/sandboxes/${id}/network`);
  assert.deepEqual(policy.body, { internet_access: false, allow_out: ["pypi.test"], deny_out: ["10.0.0.0/8"] });
  assert.deepEqual(await fetchAll(id, ["http://pypi.test/after-restart", "http://other.test/"]), [
    "200 hello from pypi.test /after-restart",
    "403 agentbox egress: other.test:80 not in allow_out",
  ]);
});
