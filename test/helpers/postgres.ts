// A private PostgreSQL 15 for tests: a new cluster in a temporary directory, listening on a free
// loopback port, run by an unprivileged user (PostgreSQL refuses to run as root), stopped and removed
// after. One per test file: each test takes a database or a schema of its own inside it.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { freePort } from "./server.js";

/** Where Debian's postgresql-15 puts its programs (scripts/setup.sh installs it). */
const BIN = "/usr/lib/postgresql/15/bin";
/** The unprivileged user the server runs as when the tests run as root. */
const RUN_AS = "nobody";

export interface TestPostgres {
  port: number;
  /** The URL of a database (default `postgres`) as the superuser, no password (trust on loopback). */
  url(database?: string): string;
  /** A new empty database; its URL. */
  createDatabase(name: string): Promise<string>;
  /** A URL whose connections use a new empty schema of the `postgres` database (a cheap fresh database for each test). */
  freshSchema(): Promise<string>;
  /** Stops the server and keeps its data (`pg_ctl stop -m <mode>`), as an outage would; start() brings it back. */
  halt(mode: "fast" | "immediate"): void;
  /** Starts a halted server again on the same port and data. */
  start(): Promise<void>;
  /** The temporary directory it lives in (the server's log is `log` there). */
  dir: string;
  stop(): Promise<void>;
}

/** Runs a PostgreSQL program, as RUN_AS when this process is root. */
function run(program: string, args: string[]): void {
  const file = path.join(BIN, program);
  if (process.getuid?.() === 0) execFileSync("runuser", ["-u", RUN_AS, "--", file, ...args], { stdio: "pipe" });
  else execFileSync(file, args, { stdio: "pipe" });
}

/**
 * `settings`: server settings given after the defaults below (so they win), e.g.
 * `synchronous_commit: "on"` for a test that stops the server hard and counts on every
 * acknowledged commit, or `shared_preload_libraries: "pg_stat_statements"`.
 */
export async function startPostgres(opts: { settings?: Record<string, string> } = {}): Promise<TestPostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-pg-"));
  if (process.getuid?.() === 0) execFileSync("chown", [RUN_AS, dir]);
  const data = path.join(dir, "data");
  const port = await freePort();
  // Trust on loopback only, no fsync (a test database need not survive power loss), C collation.
  run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"]);
  const extra = Object.entries(opts.settings ?? {})
    .map(([name, value]) => ` -c ${name}=${value}`)
    .join("");
  const start = () =>
    run("pg_ctl", [
      "-D",
      data,
      "-l",
      path.join(dir, "log"),
      "-w",
      "-o",
      `-p ${port} -h 127.0.0.1 -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200${extra}`,
      "start",
    ]);
  start();
  let stopped = false;
  /** Halted by the test (and not started again): nothing to stop. */
  let halted = false;
  const stopNow = () => {
    if (stopped) return;
    stopped = true;
    try {
      if (!halted) run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    } catch (err) {
      // Stopped already: a Ctrl-C in a terminal reaches the server too (scripts/cluster-try.ts).
      if (!/is server running/i.test(String((err as { stderr?: unknown }).stderr ?? ""))) throw err;
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  // A test file that ends without its after hook (a failed before hook, a hang) still stops its server.
  process.once("exit", stopNow);
  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`;
  // The test's own connection; opened again after a halt() and start().
  let admin = new pg.Client({ connectionString: url() });
  const connectAdmin = async () => {
    admin = new pg.Client({ connectionString: url() });
    // Cut when the server stops: not an error of the test.
    admin.on("error", () => {});
    await admin.connect();
  };
  await connectAdmin();
  let schemas = 0;
  return {
    port,
    dir,
    url,
    async createDatabase(name) {
      await admin.query(`CREATE DATABASE "${name}"`);
      return url(name);
    },
    async freshSchema() {
      const schema = `t${++schemas}`;
      await admin.query(`CREATE SCHEMA ${schema}`);
      return `${url()}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    },
    halt(mode) {
      run("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"]);
      halted = true;
    },
    async start() {
      start();
      halted = false;
      await connectAdmin();
    },
    /** Stops the server at once (open connections are cut, so pools still open end quickly after). */
    async stop() {
      stopNow();
      await admin.end().catch(() => {});
    },
  };
}
