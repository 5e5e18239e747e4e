// A part of the end-to-end suite run unchanged against a three-node cluster (a private Redis, one
// SQLite file shared by an API-only node and two executors; every sandbox request reaches the API
// node and is forwarded to its owner): the files below, run by a child `node --test` with
// AGENTBOX_TEST_CLUSTER=1 (test/helpers/server.ts). `npm run test:cluster` runs the longer list.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { test } from "node:test";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

/**
 * Files (the routes agents call most), lifecycle events with pause and the list filters, and port
 * URLs (which must name the node the client called, also when the request is relayed before Fastify).
 */
const CLUSTER_PART = ["test/files.test.ts", "test/events.test.ts", "test/ports.test.ts"];

test("files, events and ports pass against a three-node cluster", { timeout: 300_000 }, async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, AGENTBOX_TEST_CLUSTER: "1" };
  // Set by the runner of this file: a child `node --test` that sees it reports as a subprocess of it.
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=1", "--test-force-exit", ...CLUSTER_PART], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => {
    output += d;
  });
  child.stderr.on("data", (d) => {
    output += d;
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  // The failing tests with their errors (a TAP `not ok` block runs to the next `ok`/`not ok` line).
  const failures = output
    .split(/\n(?=\s*(?:not )?ok \d)/)
    .filter((block) => /^\s*not ok/.test(block))
    .join("\n");
  assert.equal(code, 0, `the cluster run failed:\n${failures || output}`);
  assert.match(output, /^# fail 0$/m);
  assert.doesNotMatch(output, /^# pass 0$/m, "no test ran");
});
