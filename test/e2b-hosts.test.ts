// End to end: E2B's official SDKs with only E2B_DOMAIN and E2B_API_KEY set (no E2B_API_URL, no
// E2B_SANDBOX_URL), against the real service started with AGENTBOX_E2B_DOMAIN: the SDKs reach the
// control API at https://api.{domain}, envd at https://49983-{id}.{domain}, the code interpreter at
// https://49999-{id}.{domain}, and a port served in the sandbox at https://{port}-{id}.{domain}
// (getHost). What an operator puts in front of the service is played by the test: wildcard DNS
// (*.e2b.test → 127.0.0.1, by resolving those names here) and a TLS front with a wildcard
// certificate that passes each connection through unchanged (Host included).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import dns from "node:dns";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import tls from "node:tls";
import { Sandbox as CodeSandbox } from "@e2b/code-interpreter";
import { Sandbox } from "e2b";
import { createKey } from "./helpers/leftovers.js";
import { startServer, type TestServer } from "./helpers/server.js";

const ZONE = "e2b.test";
let server: TestServer;
let front: tls.Server;
let domain: string;
let certDir: string;
const sandboxes: string[] = [];

/** The wildcard DNS record an operator would add: every *.e2b.test name is this machine. */
function resolveZoneToLoopback(): void {
  const lookup = dns.lookup;
  const patched = (host: string, options: unknown, callback?: unknown) => {
    const cb = (typeof options === "function" ? options : callback) as (...args: unknown[]) => void;
    const opts = (typeof options === "object" && options !== null ? options : {}) as { all?: boolean };
    if (!host.endsWith(`.${ZONE}`)) return (lookup as (...args: unknown[]) => void)(host, options, callback);
    if (opts.all) cb(null, [{ address: "127.0.0.1", family: 4 }]);
    else cb(null, "127.0.0.1", 4);
  };
  (dns as { lookup: unknown }).lookup = patched;
}

/** The TLS front: a self-signed *.e2b.test certificate, every connection relayed as it is to the service. */
async function startTlsFront(port: () => number): Promise<tls.Server> {
  certDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-e2b-tls-"));
  const [key, cert] = [path.join(certDir, "key.pem"), path.join(certDir, "cert.pem")];
  execFileSync("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-days",
    "1",
    "-subj",
    `/CN=*.${ZONE}`,
    "-addext",
    `subjectAltName=DNS:*.${ZONE}`,
    "-keyout",
    key,
    "-out",
    cert,
  ]);
  const srv = tls.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (client) => {
    const upstream = net.connect(port(), "127.0.0.1");
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  return srv;
}

before(async () => {
  resolveZoneToLoopback();
  // The certificate is self-signed (and the front is on loopback only): the SDKs' HTTPS clients are told to accept it.
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
  front = await startTlsFront(() => server.port);
  // The front is not on 443 here, so the domain carries its port: https://49983-<id>.e2b.test:<port>.
  domain = `${ZONE}:${(front.address() as net.AddressInfo).port}`;
  server = await startServer({ env: { AGENTBOX_E2B_DOMAIN: domain } });
  delete process.env.E2B_API_URL;
  delete process.env.E2B_SANDBOX_URL;
  process.env.E2B_DOMAIN = domain;
  process.env.E2B_API_KEY = server.key;
});

after(async () => {
  for (const id of sandboxes) await Sandbox.kill(id).catch(() => {});
  await server?.dispose();
  front?.close();
  if (certDir) fs.rmSync(certDir, { recursive: true, force: true });
});

/** Answers every request with what reached it: its path, Host and header names. */
const ECHO_APP = `
import http.server, json
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path, "host": self.headers.get("host"), "headers": sorted(k.lower() for k in self.headers.keys())}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("127.0.0.1", 8000), Echo).serve_forever()
`;

test("with only E2B_DOMAIN set, the SDKs reach the control API, envd and the code interpreter by host name", async () => {
  const sbx = await CodeSandbox.create();
  sandboxes.push(sbx.sandboxId);
  assert.equal(sbx.sandboxDomain, domain, "the control API names the operator's domain");
  assert.equal(sbx.getHost(49983), `49983-${sbx.sandboxId}.${domain}`);

  const run = await sbx.runCode("x = 41\nx + 1");
  assert.equal(run.error, undefined);
  assert.equal(run.text, "42");
  const again = await sbx.runCode("x * 2");
  assert.equal(again.text, "82", "state kept across runs");

  const cmd = await sbx.commands.run("echo hello from $HOME");
  assert.equal(cmd.exitCode, 0);
  assert.equal(cmd.stdout, "hello from /home/user\n");
  await sbx.files.write("notes/a.txt", "written by host name");
  assert.equal(await sbx.files.read("notes/a.txt"), "written by host name");
  assert.deepEqual(
    (await sbx.files.list("notes")).map((e) => e.name),
    ["a.txt"],
  );

  const listed = await Sandbox.list().nextItems();
  assert.ok(listed.some((s) => s.sandboxId === sbx.sandboxId));
  const connected = await Sandbox.connect(sbx.sandboxId);
  assert.equal((await connected.commands.run("echo connected")).stdout, "connected\n");
  assert.equal(await sbx.isRunning(), true);
});

test("getHost(port) reaches a server in the sandbox with the sandbox's access token; not without it", async () => {
  const sbx = await Sandbox.create();
  sandboxes.push(sbx.sandboxId);
  await sbx.files.write("echo_app.py", ECHO_APP);
  await sbx.commands.run("python3 echo_app.py", { background: true, timeoutMs: 0 });
  const url = `https://${sbx.getHost(8000)}/some/page?q=1`;
  const token = { "E2B-Traffic-Access-Token": sbx.trafficAccessToken as string };
  let res: Response | undefined;
  for (let i = 0; i < 100; i++) {
    res = await fetch(url, { headers: token });
    if (res.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const body = (await res?.text()) ?? "";
  assert.equal(res?.status, 200, body);
  const seen = JSON.parse(body) as { path: string; host: string; headers: string[] };
  assert.equal(seen.path, "/some/page?q=1");
  assert.equal(seen.host, "localhost:8000");
  for (const secret of ["e2b-traffic-access-token", "x-access-token", "authorization"])
    assert.ok(!seen.headers.includes(secret), `${secret} does not reach the sandbox`);

  // X-Access-Token and the native bearer key work too.
  assert.equal((await fetch(url, { headers: { "X-Access-Token": server.key } })).status, 200);
  assert.equal((await fetch(url, { headers: { authorization: `Bearer ${server.key}` } })).status, 200);
  // No key, a wrong key: 401. Another tenant's key: 404, as for the path form.
  assert.equal((await fetch(url)).status, 401);
  assert.equal((await fetch(url, { headers: { "X-Access-Token": "nope" } })).status, 401);
  const other = createKey(server.dataDir, "e2b-hosts-other").key;
  assert.equal((await fetch(url, { headers: { "X-Access-Token": other } })).status, 404);
  // Nor envd of this sandbox by its host name: to that tenant it is not running (envd's 502), and its files are not found.
  const health = `https://${sbx.getHost(49983)}/health`;
  assert.equal((await fetch(health, { headers: { "X-Access-Token": server.key } })).status, 204);
  assert.equal((await fetch(health, { headers: { "X-Access-Token": other } })).status, 502);
  const file = `https://${sbx.getHost(49983)}/files?path=echo_app.py`;
  assert.equal((await fetch(file, { headers: { "X-Access-Token": server.key } })).status, 200);
  assert.equal((await fetch(file, { headers: { "X-Access-Token": other } })).status, 404);
  assert.equal((await fetch(health)).status, 401);
  // A port nothing listens on: the relay's 502.
  assert.equal((await fetch(`https://${sbx.getHost(8001)}/`, { headers: token })).status, 502);

  // A share link of the port (made with the native API) works on the host name without a key.
  const share = await fetch(`${server.url}/v1/agents/sandboxes/${sbx.sandboxId}/ports/8000/share`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
    body: JSON.stringify({ expires_in: 60 }),
  });
  const shared = ((await share.json()) as { url: string }).url;
  const tokenPath = shared.slice(shared.indexOf("/_share/"));
  const viaLink = await fetch(`https://${sbx.getHost(8000)}${tokenPath}linked`);
  assert.equal(viaLink.status, 200);
  assert.equal(((await viaLink.json()) as { path: string }).path, "/linked");
  assert.equal((await fetch(`https://${sbx.getHost(8001)}${tokenPath}`)).status, 401, "only for its port");

  // An upgrade request on the host name goes through the relay too, its access token stripped from the raw headers.
  const upgrade = async (headers: string) => {
    const sock = tls.connect({ host: "127.0.0.1", port: (front.address() as net.AddressInfo).port, rejectUnauthorized: false });
    sock.write(
      `GET /ws HTTP/1.1\r\nHost: ${sbx.getHost(8000)}\r\n${headers}Upgrade: websocket\r\nConnection: Upgrade\r\n` +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    let text = "";
    for await (const chunk of sock) text += chunk;
    return text;
  };
  const relayed = await upgrade(`X-Access-Token: ${server.key}\r\n`);
  assert.match(relayed, /^HTTP\/1\.\d 200/);
  const echoed = JSON.parse(relayed.slice(relayed.indexOf("{"))) as { path: string; host: string; headers: string[] };
  assert.equal(echoed.path, "/ws");
  assert.equal(echoed.host, "localhost:8000");
  assert.ok(!echoed.headers.includes("x-access-token") && !echoed.headers.includes("authorization"), JSON.stringify(echoed));
  assert.match(await upgrade(""), /^HTTP\/1\.1 401/);
});

test("a host under the domain that names no sandbox port is not routed to one", async () => {
  for (const host of [`x-y.${domain}`, `70000-abc.${domain}`, `a.b.${domain}`]) {
    const res = await fetch(`https://${host}/health`);
    // The service's own routes, by path: /health is public and answers as itself.
    assert.equal(res.status, 200, host);
    assert.equal(((await res.json()) as { status: string }).status, "ok");
  }
});
