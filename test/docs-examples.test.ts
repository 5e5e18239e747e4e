// End to end: every curl session in README.md and docs/*.md runs against the real service and
// answers what the docs show (loosely: `...`, ids, times and durations are wildcards), so the docs
// cannot drift from the service. A block marked `<!-- example: needs-internet -->` just before its
// fence is listed as skipped (this suite has no internet); every other block runs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { compare, compareEvents, compareText, type DocBlock, jsonValues, parseLoose, shellBlocks } from "./helpers/doc-examples.js";
import { writeTinyLlama } from "./helpers/gguf.js";
import { startServer, type TestServer } from "./helpers/server.js";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const FILES = [
  "README.md",
  ...fs
    .readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const BLOCKS = FILES.flatMap((f) => shellBlocks(f, fs.readFileSync(path.join(ROOT, f), "utf8")));
const OUT = "@@doc-example-output@@";

let server: TestServer;
let work: string;

before(async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-test-"));
  // The deployments walk-through deploys a model called "tiny": the suite's own small GGUF file.
  fs.mkdirSync(path.join(dataDir, "models"));
  writeTinyLlama(path.join(dataDir, "models", "tiny.gguf"));
  server = await startServer({
    dataDir,
    env: { AGENTBOX_REPLICA_THREADS: "1", AGENTBOX_WARM_POOL: "3" },
  });
  work = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-docs-"));
});

after(async () => {
  await server?.dispose();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** The docs' own service address and demo key, as this test's server has them. */
function bind(text: string): string {
  return text.replaceAll("http://127.0.0.1:8080", server.url).replaceAll("dev-key", server.key);
}

/** The block as a bash script: the variables the docs assume ($KEY, $J, $BASE the service's address,
 *  $API its agents API, a fresh $SBX), and an
 *  output marker where each documented output begins. `curl -N` follows a stream until it ends or
 *  for 6 s (a live process's output never ends): stopping it then is not a failure. The streams the
 *  docs show ending do so within about 2 s; every second of this bound is waited in full by the
 *  README's follow of a live process. */
function script(block: DocBlock): string {
  const starts = new Set(block.expectations.map((e) => e.at));
  const body = block.lines.flatMap((l, i) => (starts.has(i) ? [`printf '\\n${OUT}\\n'`, bind(l)] : [bind(l)]));
  return [
    `curl() { case " $* " in *" -N "*|*" -sN "*) command curl --max-time 6 "$@" || [ $? = 28 ];; *) command curl --max-time 120 "$@";; esac; }`,
    `export AGENTBOX_API_KEY='${server.key}' AGENTBOX_ADMIN_KEY='${server.adminKey}'`,
    `KEY="Authorization: Bearer $AGENTBOX_API_KEY"; J='content-type: application/json'; BASE='${server.url}'; API='${server.url}/v1/agents'`,
    `SBX=$(command curl -sf -X POST ${server.url}/v1/agents/sandboxes -H "$KEY" -H "$J" -d '{}' | jq -r .sandbox_id)`,
    ...body,
    `printf '\\n${OUT}\\n'`,
  ].join("\n");
}

function run(block: DocBlock): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = path.join(work, `block-${block.line}.sh`);
  fs.writeFileSync(file, script(block));
  return new Promise((resolve) => {
    execFile("bash", ["-e", file], { cwd: work, timeout: 240_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Differences between what the docs show after a command and what it printed. */
function check(expected: string, printed: string): string[] {
  const first = expected.trim();
  if (/^(event|data):/.test(first)) return compareEvents(expected, printed);
  if (!/^[[{]/.test(first)) return compareText(expected, printed);
  const docs = parseLoose(expected.replace(/\s{2,}\(\d+\)\s*$/, ""));
  const got = jsonValues(printed);
  if (got.length < docs.length) return [`documented ${docs.length} JSON values, got:\n${printed.slice(0, 1000)}`];
  const tail = got.slice(got.length - docs.length);
  return docs.flatMap((d, i) => compare(d, tail[i]));
}

describe("the curl sessions in the docs", () => {
  const skipped = BLOCKS.filter((b) => b.marker !== null);
  test("some blocks are found, and each block skipped says why", () => {
    assert.ok(BLOCKS.length >= 10, `only ${BLOCKS.length} curl blocks found`);
    for (const b of skipped) assert.equal(b.marker, "needs-internet", `${b.file}:${b.line} has an unknown marker`);
    console.log(`skipped (no internet here):\n${skipped.map((b) => `  ${b.file}:${b.line} ${b.marker}`).join("\n") || "  none"}`);
  });

  for (const block of BLOCKS.filter((b) => b.marker === null)) {
    test(`${block.file}:${block.line}`, { timeout: 300_000 }, async () => {
      const logFrom = server.logs().length;
      const { code, stdout, stderr } = await run(block);
      const segments = stdout.split(`\n${OUT}\n`);
      const problems: string[] = [];
      if (code !== 0) problems.push(`bash exited with ${code}: ${stderr.slice(-2000)}`);
      block.expectations.forEach((e, i) => {
        const printed = segments[i];
        if (printed === undefined) return;
        const differences = check(bind(e.expect.text), printed);
        // What the command printed, to tell a wrong answer from an empty one.
        if (differences.length > 0) differences.push(`printed: ${printed.slice(0, 600)}`);
        for (const d of differences) problems.push(`${block.file}:${e.expect.line}: ${d}`);
      });
      // The service's warnings while the block ran, to tell a wrong answer from a refused request.
      if (problems.length > 0) problems.push(`service log during the block:\n${server.logs().slice(logFrom).slice(-3000) || "(nothing)"}`);
      assert.deepEqual(problems, [], problems.join("\n\n"));
    });
  }
});
