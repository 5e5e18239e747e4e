// PostgreSQL going away under load: a node on a private PostgreSQL 15 takes creates, runs, file
// writes, key writes and reads while the database is stopped (`pg_ctl stop -m fast`, then
// `-m immediate`) and started again. While it is down every answer is a success or a 503
// `database_unavailable` with Retry-After, never a 500, and the node does not crash; once it is
// back the node serves again by itself within seconds, and everything it acknowledged is there
// (with the sandboxes' `created` events, also those written while it was down).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { createSandbox, sandboxEvents } from "./helpers/api.js";
import { eventually } from "./helpers/leftovers.js";
import { startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface Answer {
  op: string;
  phase: "up" | "down" | "back";
  status: number;
  code?: string;
  retryAfter: string | null;
}

describe("PostgreSQL down and back under load", () => {
  let postgres: TestPostgres;
  let databaseUrl: string;
  let node: TestServer;
  let key: string;
  let sandbox: string;

  before(async () => {
    // Commits wait for their WAL (the helper's default does not): an immediate stop is a crash, and
    // an acknowledged write must survive it as it would on a production server.
    postgres = await startPostgres({ settings: { synchronous_commit: "on" } });
    databaseUrl = await postgres.createDatabase("agentbox");
    node = await startServer({ env: { AGENTBOX_DATABASE_URL: databaseUrl, AGENTBOX_NODE_ID: "node-pg" } });
    const made = await client({ url: node.url, key: node.adminKey })<{ key: string }>("POST", "/v1/admin/keys", {
      name: "outage",
      tenant_id: "team-outage",
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    key = made.body.key;
    sandbox = await createSandbox(client({ url: node.url, key }));
  });

  after(async () => {
    // A node that died: what it said last.
    if (node && (node.process.exitCode !== null || node.process.signalCode !== null)) process.stderr.write(node.logs().slice(-4000));
    await node?.dispose();
    await postgres?.stop();
  });

  for (const mode of ["fast", "immediate"] as const) {
    test(`pg_ctl stop -m ${mode}: 503 with Retry-After while down, recovery by itself, nothing acknowledged lost`, async (t) => {
      const call = client({ url: node.url, key });
      const admin = client({ url: node.url, key: node.adminKey });
      const answers: Answer[] = [];
      const createdIds: string[] = [];
      const keyIds: string[] = [];
      const written = new Map<string, string>();
      let phase: Answer["phase"] = "up";
      let running = true;
      let n = 0;

      const note = (op: string, res: { status: number; body: unknown; headers: Headers }) => {
        const code = (res.body as { error?: { code?: string } } | undefined)?.error?.code;
        answers.push({ op, phase, status: res.status, code, retryAfter: res.headers.get("retry-after") });
      };
      // Each worker goes round the mix: a create (at most a few live at once: killed again once
      // acknowledged and checked later), a run, a file write, a key made and the keys listed.
      const ops: (() => Promise<void>)[] = [
        async () => {
          if (createdIds.length >= 12) return;
          const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { timeout: 600 });
          note("create", res);
          if (res.status === 201) createdIds.push(res.body.sandbox_id);
        },
        async () => note("run", await call("POST", `/v1/agents/sandboxes/${sandbox}/code/run`, { language: "python", code: "print(1)" })),
        async () => {
          const path = `/home/user/${mode}-${++n}.txt`;
          const res = await call("POST", `/v1/agents/sandboxes/${sandbox}/files/write`, { path, content: path });
          note("write", res);
          if (res.status === 200) written.set(path, path);
        },
        async () => {
          const res = await admin<{ id: string }>("POST", "/v1/admin/keys", { name: `k-${mode}-${++n}`, tenant_id: "team-outage" });
          note("key create", res);
          if (res.status === 201) keyIds.push(res.body.id);
        },
        async () => note("key list", await admin("GET", "/v1/admin/keys")),
        async () => note("sandbox read", await call("GET", `/v1/agents/sandboxes/${sandbox}`)),
      ];
      const worker = async (offset: number) => {
        for (let i = offset; running; i++)
          // No answer at all (a crashed node, a cut connection) is a failure like a 500: noted, asserted below.
          await (ops[i % ops.length] as () => Promise<void>)().catch((err: Error) => {
            answers.push({ op: `#${i % ops.length}`, phase, status: 0, code: String(err.cause ?? err), retryAfter: null });
          });
      };
      const workers = [0, 2, 4].map(worker);

      await new Promise((r) => setTimeout(r, 1500));
      phase = "down";
      postgres.halt(mode);
      await new Promise((r) => setTimeout(r, 3000));
      phase = "back";
      await postgres.start();
      const backAt = Date.now();
      // Recovered: a create (which writes its record) succeeds again.
      let recoveredIn = -1;
      while (Date.now() - backAt < 30_000) {
        const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { timeout: 600 });
        if (res.status === 201) {
          createdIds.push(res.body.sandbox_id);
          recoveredIn = Date.now() - backAt;
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 1000));
      running = false;
      await Promise.all(workers);
      t.diagnostic(`recovered ${recoveredIn} ms after PostgreSQL was back; ${answers.length} answers`);
      const tally = new Map<string, number>();
      for (const a of answers) tally.set(`${a.phase} ${a.op} ${a.status}`, (tally.get(`${a.phase} ${a.op} ${a.status}`) ?? 0) + 1);
      t.diagnostic([...tally].map(([k, v]) => `${k}: ${v}`).join(", "));

      // Never a 500; every failure is the one 503 with Retry-After.
      const failed = answers.filter((a) => a.status >= 300);
      for (const a of failed) {
        assert.equal(a.status, 503, JSON.stringify(a));
        assert.equal(a.code, "database_unavailable", JSON.stringify(a));
        assert.ok(Number(a.retryAfter) >= 1, JSON.stringify(a));
      }
      // While down, what needs the database was refused (so the outage was real) and runs went on.
      const down = answers.filter((a) => a.phase === "down");
      assert.ok(
        down.some((a) => a.status === 503),
        JSON.stringify(down),
      );
      assert.ok(
        down.some((a) => a.op === "run" && a.status === 200),
        "runs in a live sandbox go on without the database",
      );
      assert.ok(recoveredIn >= 0 && recoveredIn < 15_000, `recovered ${recoveredIn} ms after the database came back`);
      assert.equal(node.process.exitCode, null, "the node is still running");
      assert.equal(node.process.signalCode, null, "the node is still running");

      // Everything acknowledged is there: sandboxes (records in the database and answered), keys, files.
      const sql = new pg.Client({ connectionString: databaseUrl });
      await sql.connect();
      try {
        const ids = (await sql.query<{ id: string }>("SELECT id FROM sandboxes WHERE id = ANY($1)", [createdIds])).rows.map((r) => r.id);
        assert.deepEqual(ids.sort(), [...createdIds].sort());
        const keys = (await sql.query<{ id: string }>("SELECT id FROM api_keys WHERE id = ANY($1)", [keyIds])).rows.map((r) => r.id);
        assert.deepEqual(keys.sort(), [...keyIds].sort());
      } finally {
        await sql.end();
      }
      for (const id of createdIds) {
        const got = await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`);
        assert.equal(got.status, 200, JSON.stringify(got.body));
        assert.equal(got.body.status, "running");
        // Its `created` event too (one written during the outage is kept and written once the database is back).
        assert.ok(
          await eventually(async () => (await sandboxEvents(call, id)).body.some((e) => e.type === "created"), 10_000, 200),
          `the created event of ${id}`,
        );
      }
      for (const [path, content] of written) {
        const read = await call<{ content: string }>("POST", `/v1/agents/sandboxes/${sandbox}/files/read`, { path });
        assert.equal(read.body.content, content, path);
      }
      assert.ok(createdIds.length > 0 && keyIds.length > 0 && written.size > 0, "the load was acknowledged in part");
      for (const id of createdIds.splice(0)) assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
    });
  }
});
