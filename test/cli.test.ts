// The operator CLI (`npm run cli -- keys ...`): a new key is printed once and stored only as a hash,
// `keys list` never shows a key, `keys revoke` ends a key, bad usage exits non-zero with a message.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { cli } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface KeyJson {
  key: string;
  id: string;
  tenantId: string;
  name: string;
  prefix: string;
  revokedAt: string | null;
}

let dataDir: string;

before(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-cli-"));
});

after(() => {
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Every byte the database holds now (main file, WAL and shared memory). */
function databaseBytes(): Buffer {
  return Buffer.concat(
    fs
      .readdirSync(dataDir)
      .filter((f) => f.startsWith("agentbox.db"))
      .map((f) => fs.readFileSync(path.join(dataDir, f))),
  );
}

describe("keys create", () => {
  test("prints the new key once, with its id and tenant; the database holds only its hash", () => {
    const res = cli(dataDir, ["keys", "create", "--name", "first"]);
    assert.equal(res.status, 0, res.stderr);
    const keys = res.stdout.match(/abx_[A-Za-z0-9_-]+/g) ?? [];
    assert.equal(keys.length, 1, res.stdout);
    const key = keys[0] as string;
    assert.ok(key.length >= 30, "the key is long enough to be unguessable");
    assert.match(res.stdout, /shown once/i);
    assert.match(res.stdout, /^id: [0-9a-f-]{36}$/m);
    assert.match(res.stdout, /^tenant: \S+$/m);
    const bytes = databaseBytes();
    assert.ok(!bytes.includes(Buffer.from(key)), "the key itself is not stored");
    assert.ok(bytes.includes(Buffer.from(crypto.createHash("sha256").update(key).digest("hex"))), "its SHA-256 is");
  });

  test("--json gives the key and its record; --tenant sets the tenant, otherwise each key gets a new one", () => {
    const a = cli(dataDir, ["keys", "create", "--name", "json-a", "--json"]);
    const b = cli(dataDir, ["keys", "create", "--name", "json-b", "--json"]);
    const t = cli(dataDir, ["keys", "create", "--name", "json-t", "--tenant", "acme", "--json"]);
    for (const r of [a, b, t]) assert.equal(r.status, 0, r.stderr);
    const [ka, kb, kt] = [a, b, t].map((r) => JSON.parse(r.stdout) as KeyJson) as [KeyJson, KeyJson, KeyJson];
    assert.equal(ka.name, "json-a");
    assert.equal(ka.prefix, ka.key.slice(0, ka.prefix.length));
    assert.ok(ka.prefix.length < ka.key.length / 2, "the prefix is a small part of the key");
    assert.equal(ka.revokedAt, null);
    assert.notEqual(ka.key, kb.key);
    assert.notEqual(ka.tenantId, kb.tenantId);
    assert.equal(kt.tenantId, "acme");
  });
});

describe("keys list", () => {
  test("lists every key by id, prefix, name and tenant, and never a key", () => {
    const made = JSON.parse(cli(dataDir, ["keys", "create", "--name", "listed", "--json"]).stdout) as KeyJson;
    const res = cli(dataDir, ["keys", "list"]);
    assert.equal(res.status, 0, res.stderr);
    const line = res.stdout.split("\n").find((l) => l.includes(made.id));
    assert.ok(line, res.stdout);
    assert.match(line, /listed/);
    assert.ok(line.includes(made.prefix));
    assert.ok(line.includes(made.tenantId));
    assert.match(line, /active/);
    assert.ok(!res.stdout.includes(made.key), "the key is not shown");
    assert.doesNotMatch(res.stdout, /abx_[A-Za-z0-9_-]{20,}/, "no full key at all");

    const json = cli(dataDir, ["keys", "list", "--json"]);
    assert.equal(json.status, 0);
    const rows = JSON.parse(json.stdout) as Record<string, unknown>[];
    assert.ok(rows.length >= 4);
    for (const row of rows) {
      assert.ok(!("key" in row) && !("hash" in row), JSON.stringify(row));
    }
    assert.ok(!json.stdout.includes(made.key));
  });
});

describe("keys revoke", () => {
  let server: TestServer;

  before(async () => {
    server = await startServer({ dataDir });
  });

  after(async () => {
    await server?.dispose();
  });

  test("revoke by id: the key stops working, list shows it revoked, a second revoke fails", async () => {
    const made = JSON.parse(cli(dataDir, ["keys", "create", "--name", "to-revoke", "--json"]).stdout) as KeyJson;
    const call = client({ url: server.url, key: made.key });
    assert.equal((await call("GET", "/v1/agents/sandboxes")).status, 200);

    const res = cli(dataDir, ["keys", "revoke", made.id]);
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /revoked/);
    assert.equal((await call("GET", "/v1/agents/sandboxes")).status, 401);

    const line =
      cli(dataDir, ["keys", "list"])
        .stdout.split("\n")
        .find((l) => l.includes(made.id)) ?? "";
    assert.match(line, /revoked \d{4}-\d\d-\d\dT/);

    const again = cli(dataDir, ["keys", "revoke", made.id]);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /no active key/);
  });

  test("revoke by prefix; other keys keep working", async () => {
    const keep = JSON.parse(cli(dataDir, ["keys", "create", "--name", "keep", "--json"]).stdout) as KeyJson;
    const gone = JSON.parse(cli(dataDir, ["keys", "create", "--name", "gone", "--json"]).stdout) as KeyJson;
    assert.equal(cli(dataDir, ["keys", "revoke", gone.prefix]).status, 0);
    assert.equal((await client({ url: server.url, key: gone.key })("GET", "/v1/agents/sandboxes")).status, 401);
    assert.equal((await client({ url: server.url, key: keep.key })("GET", "/v1/agents/sandboxes")).status, 200);
  });

  test("revoking a key that does not exist fails", () => {
    const res = cli(dataDir, ["keys", "revoke", "no-such-key"]);
    assert.equal(res.status, 1);
    assert.match(res.stderr, /no active key matches 'no-such-key'/);
  });
});

describe("bad usage", () => {
  test("exits non-zero with a message, creating no key", () => {
    const before = (JSON.parse(cli(dataDir, ["keys", "list", "--json"]).stdout) as unknown[]).length;
    for (const [args, status, pattern] of [
      [[], 2, /usage/],
      [["keys"], 2, /usage/],
      [["keys", "frobnicate"], 2, /usage/],
      [["tenants", "list"], 2, /usage/],
      [["keys", "create"], 2, /--name/],
      [["keys", "revoke"], 2, /id or key prefix/],
      [["keys", "create", "--name", "x", "--rate-limit", "fast"], 1, /--rate-limit must be a positive integer/],
      [["keys", "create", "--name", "x", "--bogus"], 1, /bogus/],
    ] as [string[], number, RegExp][]) {
      const res = cli(dataDir, args);
      assert.equal(res.status, status, `${args.join(" ")}: ${res.stdout}${res.stderr}`);
      assert.match(res.stderr, pattern, args.join(" "));
      assert.doesNotMatch(res.stdout, /abx_/);
    }
    assert.equal((JSON.parse(cli(dataDir, ["keys", "list", "--json"]).stdout) as unknown[]).length, before);
  });
});
