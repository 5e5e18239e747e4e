// The operator CLI (`npm run cli -- ...`). `keys` and `tenants` go through the running service's
// admin API: a new key is printed once, `keys list` never shows a key, `keys revoke` ends a key (by
// id or prefix), `tenants get|set` read and change quotas. `keys bootstrap` and `admin rotate-key`
// work on the database with no service. Bad usage exits non-zero with a message.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { cli } from "./helpers/leftovers.js";
import { haveImageTools, startTemplateRegistry, type TemplateRegistry } from "./helpers/oci-image.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface KeyJson {
  key: string;
  id: string;
  tenant_id: string;
  name: string;
  prefix: string;
  revoked_at: string | null;
}

let server: TestServer;
/** Runs the CLI against the test service with its admin key. */
let run: (args: string[], env?: Record<string, string>) => ReturnType<typeof cli>;

before(async () => {
  server = await startServer();
  run = (args, env = {}) => cli(server.dataDir, args, { AGENTBOX_URL: server.url, AGENTBOX_ADMIN_KEY: server.adminKey, ...env });
});

after(async () => {
  await server?.dispose();
});

/** Every byte the database holds now (main file, WAL and shared memory). */
function databaseBytes(dataDir: string): Buffer {
  return Buffer.concat(
    fs
      .readdirSync(dataDir)
      .filter((f) => f.startsWith("agentbox.db"))
      .map((f) => fs.readFileSync(path.join(dataDir, f))),
  );
}

const created = (args: string[]) => {
  const res = run(["keys", "create", ...args, "--json"]);
  assert.equal(res.status, 0, res.stderr);
  return JSON.parse(res.stdout) as KeyJson;
};

describe("keys create", () => {
  test("prints the new key once, with its id and tenant; the database holds only its hash; the key works", async () => {
    const res = run(["keys", "create", "--name", "first"]);
    assert.equal(res.status, 0, res.stderr);
    const keys = res.stdout.match(/abx_[A-Za-z0-9_-]+/g) ?? [];
    assert.equal(keys.length, 1, res.stdout);
    const key = keys[0] as string;
    assert.ok(key.length >= 30, "the key is long enough to be unguessable");
    assert.match(res.stdout, /shown once/i);
    assert.match(res.stdout, /^id: [0-9a-f-]{36}$/m);
    assert.match(res.stdout, /^tenant: \S+$/m);
    const bytes = databaseBytes(server.dataDir);
    assert.ok(!bytes.includes(Buffer.from(key)), "the key itself is not stored");
    assert.ok(bytes.includes(Buffer.from(crypto.createHash("sha256").update(key).digest("hex"))), "its SHA-256 is");
    assert.equal((await client({ url: server.url, key })("GET", "/v1/agents/sandboxes")).status, 200);
  });

  test("--json gives the key and its record; --tenant sets the tenant, otherwise each key gets a new one", () => {
    const [ka, kb, kt] = [created(["--name", "json-a"]), created(["--name", "json-b"]), created(["--name", "json-t", "--tenant", "acme"])];
    assert.equal(ka.name, "json-a");
    assert.equal(ka.prefix, ka.key.slice(0, ka.prefix.length));
    assert.ok(ka.prefix.length < ka.key.length / 2, "the prefix is a small part of the key");
    assert.equal(ka.revoked_at, null);
    assert.notEqual(ka.key, kb.key);
    assert.notEqual(ka.tenant_id, kb.tenant_id);
    assert.equal(kt.tenant_id, "acme");
  });

  test("--url and --admin-key flags work like the environment", () => {
    const res = cli(server.dataDir, ["keys", "create", "--name", "flags", "--url", server.url, "--admin-key", server.adminKey, "--json"]);
    assert.equal(res.status, 0, res.stderr);
    assert.match((JSON.parse(res.stdout) as KeyJson).key, /^abx_/);
  });
});

describe("keys list", () => {
  test("lists every key by id, prefix, name and tenant, and never a key", () => {
    const made = created(["--name", "listed"]);
    const res = run(["keys", "list"]);
    assert.equal(res.status, 0, res.stderr);
    const line = res.stdout.split("\n").find((l) => l.includes(made.id));
    assert.ok(line, res.stdout);
    assert.match(line, /listed/);
    assert.ok(line.includes(made.prefix));
    assert.ok(line.includes(made.tenant_id));
    assert.match(line, /active/);
    assert.ok(!res.stdout.includes(made.key), "the key is not shown");
    assert.doesNotMatch(res.stdout, /abx_[A-Za-z0-9_-]{20,}/, "no full key at all");

    const json = run(["keys", "list", "--json"]);
    assert.equal(json.status, 0);
    const rows = JSON.parse(json.stdout) as Record<string, unknown>[];
    assert.ok(rows.length >= 4);
    for (const row of rows) assert.ok(!("key" in row) && !("hash" in row), JSON.stringify(row));
    assert.ok(!json.stdout.includes(made.key));
  });
});

describe("keys revoke", () => {
  test("revoke by id: the key stops working, list shows it revoked, a second revoke fails", async () => {
    const made = created(["--name", "to-revoke"]);
    const call = client({ url: server.url, key: made.key });
    assert.equal((await call("GET", "/v1/agents/sandboxes")).status, 200);

    const res = run(["keys", "revoke", made.id]);
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /revoked/);
    assert.equal((await call("GET", "/v1/agents/sandboxes")).status, 401);

    const line =
      run(["keys", "list"])
        .stdout.split("\n")
        .find((l) => l.includes(made.id)) ?? "";
    assert.match(line, /revoked \d{4}-\d\d-\d\dT/);

    const again = run(["keys", "revoke", made.id]);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /no active key/);
  });

  test("revoke by prefix; other keys keep working", async () => {
    const keep = created(["--name", "keep"]);
    const gone = created(["--name", "gone"]);
    assert.equal(run(["keys", "revoke", gone.prefix]).status, 0);
    assert.equal((await client({ url: server.url, key: gone.key })("GET", "/v1/agents/sandboxes")).status, 401);
    assert.equal((await client({ url: server.url, key: keep.key })("GET", "/v1/agents/sandboxes")).status, 200);
  });

  test("revoke by a unique beginning of the id; an ambiguous beginning is refused and revokes nothing", async () => {
    const one = created(["--name", "by-id-prefix"]);
    const other = created(["--name", "bystander"]);
    const ambiguous = run(["keys", "revoke", "abx_"]); // every key's prefix starts so
    assert.equal(ambiguous.status, 1);
    assert.match(ambiguous.stderr, /'abx_' matches \d+ active keys: .*by-id-prefix.*give more of the id, nothing was revoked/);
    assert.equal((await client({ url: server.url, key: one.key })("GET", "/v1/agents/sandboxes")).status, 200);

    const res = run(["keys", "revoke", one.id.slice(0, 8)]);
    assert.equal(res.status, 0, res.stderr);
    assert.equal((await client({ url: server.url, key: one.key })("GET", "/v1/agents/sandboxes")).status, 401);
    assert.equal((await client({ url: server.url, key: other.key })("GET", "/v1/agents/sandboxes")).status, 200);
    // The prefix as `keys list` prints it (with its ellipsis) works too.
    assert.equal(run(["keys", "revoke", `${other.prefix}…`]).status, 0);
    assert.equal((await client({ url: server.url, key: other.key })("GET", "/v1/agents/sandboxes")).status, 401);
  });

  test("revoking a key that does not exist fails", () => {
    const res = run(["keys", "revoke", "no-such-key"]);
    assert.equal(res.status, 1);
    assert.match(res.stderr, /no active key matches 'no-such-key'/);
  });
});

describe("tenants", () => {
  test("set changes the quotas given, 'default' resets one; get and list show them", () => {
    const set = run(["tenants", "set", "cli-tenant", "--max-sandboxes", "3", "--memory-mb", "4096", "--json"]);
    assert.equal(set.status, 0, set.stderr);
    const t = JSON.parse(set.stdout) as { quotas: Record<string, number | null>; effective: Record<string, number> };
    assert.equal(t.quotas.max_sandboxes, 3);
    assert.equal(t.effective.memory_mb, 4096);
    const reset = run(["tenants", "set", "cli-tenant", "--memory-mb", "default", "--json"]);
    assert.equal(reset.status, 0, reset.stderr);
    assert.equal((JSON.parse(reset.stdout) as typeof t).quotas.memory_mb, null);
    const get = run(["tenants", "get", "cli-tenant"]);
    assert.equal(get.status, 0, get.stderr);
    assert.match(get.stdout, /max_sandboxes\s+3\s+\(set\)/);
    assert.match(get.stdout, /memory_mb\s+\d+\s+\(default\)/);
    const list = run(["tenants", "list"]);
    assert.equal(list.status, 0, list.stderr);
    assert.match(list.stdout, /tenant cli-tenant/);
  });

  test("a refused value is reported with the service's message", () => {
    const res = run(["tenants", "set", "cli-tenant", "--max-processes", "1"]);
    assert.equal(res.status, 1);
    assert.match(res.stderr, /400.*invalid_request/);
  });
});

describe("without the service", () => {
  let dataDir: string;

  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-cli-"));
  });

  after(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test("keys bootstrap writes a key straight into the database, stored as its hash", () => {
    const res = cli(dataDir, ["keys", "bootstrap", "--name", "setup", "--tenant", "first-tenant", "--json"]);
    assert.equal(res.status, 0, res.stderr);
    const made = JSON.parse(res.stdout) as KeyJson;
    assert.match(made.key, /^abx_/);
    assert.equal(made.tenant_id, "first-tenant");
    const bytes = databaseBytes(dataDir);
    assert.ok(!bytes.includes(Buffer.from(made.key)));
    assert.ok(bytes.includes(Buffer.from(crypto.createHash("sha256").update(made.key).digest("hex"))));
  });

  test("admin rotate-key prints a new admin key once and stores its hash", () => {
    const res = cli(dataDir, ["admin", "rotate-key"]);
    assert.equal(res.status, 0, res.stderr);
    const key = /abxadm_[A-Za-z0-9_-]+/.exec(res.stdout)?.[0] as string;
    assert.ok(key, res.stdout);
    const bytes = databaseBytes(dataDir);
    assert.ok(!bytes.includes(Buffer.from(key)));
    assert.ok(bytes.includes(Buffer.from(crypto.createHash("sha256").update(key).digest("hex"))));
  });

  test("the HTTP commands say so when no service answers or no admin key is given", () => {
    const down = cli(dataDir, ["keys", "list"], { AGENTBOX_URL: "http://127.0.0.1:9", AGENTBOX_ADMIN_KEY: "x" });
    assert.equal(down.status, 1);
    assert.match(down.stderr, /cannot reach the service/);
    const noKey = cli(dataDir, ["keys", "list"], { AGENTBOX_URL: server.url });
    assert.equal(noKey.status, 2);
    assert.match(noKey.stderr, /AGENTBOX_ADMIN_KEY/);
    const wrongKey = cli(dataDir, ["keys", "list"], { AGENTBOX_URL: server.url, AGENTBOX_ADMIN_KEY: server.key });
    assert.equal(wrongKey.status, 1);
    assert.match(wrongKey.stderr, /401.*unauthorized/);
  });
});

describe("bad usage", () => {
  test("exits non-zero with a message, creating no key", () => {
    const before = (JSON.parse(run(["keys", "list", "--json"]).stdout) as unknown[]).length;
    for (const [args, status, pattern] of [
      [[], 2, /usage/],
      [["keys"], 2, /usage/],
      [["keys", "frobnicate"], 2, /usage/],
      [["tenants", "frobnicate"], 2, /usage/],
      [["tenants", "get"], 2, /TENANT_ID/],
      [["tenants", "set", "t"], 2, /quota flag/],
      [["tenants", "set", "t", "--max-sandboxes=-1"], 1, /non-negative integer or "default"/],
      [["keys", "create"], 2, /--name/],
      [["keys", "bootstrap"], 2, /--name/],
      [["keys", "revoke"], 2, /id or key prefix/],
      [["keys", "create", "--name", "x", "--rate-limit", "fast"], 1, /--rate-limit must be a positive integer/],
      [["keys", "create", "--name", "x", "--bogus"], 1, /bogus/],
    ] as [string[], number, RegExp][]) {
      const res = run(args);
      assert.equal(res.status, status, `${args.join(" ")}: ${res.stdout}${res.stderr}`);
      assert.match(res.stderr, pattern, args.join(" "));
      assert.doesNotMatch(res.stdout, /abx_/);
    }
    assert.equal((JSON.parse(run(["keys", "list", "--json"]).stdout) as unknown[]).length, before);
  });
});

describe("agentbox template", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  let images: TemplateRegistry;
  let tplServer: TestServer;
  let image: string;
  let work: string;
  const runAgent = (args: string[]) => cli(tplServer.dataDir, args, { AGENTBOX_URL: tplServer.url, AGENTBOX_API_KEY: tplServer.key });

  before(async () => {
    if (!haveImageTools) return;
    images = await startTemplateRegistry();
    image = images.python;
    tplServer = await startServer({ env: images.env });
    work = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-cli-template-"));
    fs.mkdirSync(path.join(work, "ctx/data"), { recursive: true });
    fs.writeFileSync(path.join(work, "ctx/hello.txt"), "hello from the context\n");
    fs.writeFileSync(path.join(work, "ctx/data/n.txt"), "7\n");
    fs.writeFileSync(path.join(work, "ctx/not-copied.txt"), "x\n");
  });

  after(async () => {
    await tplServer?.dispose();
    await images?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  test("build -f Dockerfile --context DIR uploads what it COPYs, streams the log, and the template runs", async () => {
    const dockerfile = path.join(work, "Dockerfile");
    fs.writeFileSync(
      dockerfile,
      `FROM ${image}\nENV GREETING=hi\nWORKDIR /app\nCOPY hello.txt data ./\nRUN echo "$GREETING built" > built.txt\n`,
    );
    const r = runAgent(["template", "build", "-f", dockerfile, "--name", "cli-tpl", "--context", path.join(work, "ctx")]);
    assert.equal(r.status, 0, r.stderr);
    const templateId = r.stdout.trim();
    assert.match(templateId, /^tpl_/);
    assert.match(r.stderr, /Dockerfile line 5 \(RUN\)/);
    assert.match(r.stderr, /build completed/);
    const list = runAgent(["template", "list", "--json"]);
    assert.equal(list.status, 0, list.stderr);
    assert.ok((JSON.parse(list.stdout) as { name: string }[]).some((t) => t.name === "cli-tpl"));
    const call = client(tplServer);
    const created = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { template: templateId });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const cmd = await call<{ stdout: string }>("POST", `/v1/agents/sandboxes/${created.body.sandbox_id}/commands/run`, {
      command: 'pwd; echo "$(<hello.txt)"; echo "$(<n.txt)"; echo "$(<built.txt)"; echo *', // bash builtins: the image has no coreutils
    });
    assert.deepEqual(cmd.body.stdout.trim().split("\n"), ["/app", "hello from the context", "7", "hi built", "built.txt hello.txt n.txt"]);
    await call("DELETE", `/v1/agents/sandboxes/${created.body.sandbox_id}`);
    const del = runAgent(["template", "delete", templateId]);
    assert.equal(del.status, 0, del.stderr);
    assert.equal((await call("GET", `/v1/agents/templates/${templateId}`)).status, 404);
  });

  test("a failing build exits 1 and names the Dockerfile line", () => {
    const dockerfile = path.join(work, "Dockerfile.fail");
    fs.writeFileSync(dockerfile, `FROM ${image}\nRUN echo broken >&2; exit 4\n`);
    const r = runAgent(["template", "build", "-f", dockerfile, "--name", "cli-fail"]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /build failed: Dockerfile line 2 \(RUN\) failed: exit 4: broken/);
    const cancel = runAgent(["template", "cancel", "bld_nothing"]);
    assert.notEqual(cancel.status, 0);
    assert.match(cancel.stderr, /404: Build 'bld_nothing' does not exist/);
  });
});
