// The settings kernel's one parser: defaults (fixed and derived from the machine), bounds, clamps,
// booleans, lists, enums, URLs, custom parsers, and start-up errors that name the variable.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig } from "../../src/config.js";
import { loadDeploymentsConfig } from "../../src/deployments/settings.js";
import { eventSettings } from "../../src/events/settings.js";
import { loadFilesConfig } from "../../src/files/settings.js";
import { networkSettings } from "../../src/network/settings.js";
import { sandboxSettings } from "../../src/sandbox/settings.js";
import { defineSettings, type Machine, readSettings, settingsOf } from "../../src/settings/kernel.js";
import { vectorSettings } from "../../src/vectors/settings.js";

const machine: Machine = { cores: 4, memoryMb: 16384, openFiles: 4096, processTable: 40000 };
const setting = settingsOf("test");
const schema = defineSettings({
  count: setting.integer("T_COUNT", { default: 5, minimum: 1, maximum: 10, doc: "d" }),
  ratio: setting.number("T_RATIO", { default: 0.5, doc: "d" }),
  floor: setting.integer("T_FLOOR", { default: 3, atLeast: 1, doc: "d" }),
  derived: setting.integer("T_DERIVED", { default: (m, get) => m.cores * (get("count") as number), defaultDoc: "cores × count", doc: "d" }),
  flag: setting.boolean("T_FLAG", { default: false, doc: "d" }),
  name: setting.string("T_NAME", { default: "x", doc: "d" }),
  maybe: setting.string("T_MAYBE", { doc: "d" }),
  prefix: setting.string("T_PREFIX", { default: "p/", allowEmpty: true, doc: "d" }),
  items: setting.list("T_ITEMS", { doc: "d" }),
  mode: setting.enum("T_MODE", ["a", "b"], { default: "a", doc: "d" }),
  url: setting.url("T_URL", { doc: "d" }),
  json: setting.custom("T_JSON", {
    default: () => ({ n: 0 }),
    defaultDoc: "`{}`",
    parse: (raw) => {
      const v = JSON.parse(raw) as { n: number };
      if (typeof v.n !== "number") throw new Error("needs n");
      return v;
    },
    doc: "d",
  }),
});

const read = (env: NodeJS.ProcessEnv) => readSettings(schema, env, machine);

test("unset or empty: each setting's default, derived ones from the machine and other settings", () => {
  const s = read({ T_COUNT: "" });
  assert.deepEqual(s, {
    count: 5,
    ratio: 0.5,
    floor: 3,
    derived: 20,
    flag: false,
    name: "x",
    maybe: undefined,
    prefix: "p/",
    items: [],
    mode: "a",
    url: undefined,
    json: { n: 0 },
  });
  assert.equal(read({ T_COUNT: "2" }).derived, 8, "a derived default follows the value it derives from");
  assert.equal(read({ T_PREFIX: "" }).prefix, "", "an empty value is a value where the setting allows it");
});

test("numbers: integers and bounds are checked, the error names the variable and the value", () => {
  assert.equal(read({ T_COUNT: "10" }).count, 10);
  assert.throws(() => read({ T_COUNT: "11" }), /^Error: T_COUNT must be an integer from 1 to 10, got '11'$/);
  assert.throws(() => read({ T_COUNT: "2.5" }), /T_COUNT must be an integer from 1 to 10, got '2.5'/);
  assert.throws(() => read({ T_COUNT: "many" }), /T_COUNT must be an integer/);
  assert.equal(read({ T_RATIO: "1.25" }).ratio, 1.25);
  assert.throws(() => read({ T_RATIO: "-1" }), /T_RATIO must be a non-negative number, got '-1'/);
  assert.equal(read({ T_FLOOR: "0" }).floor, 1, "a value under atLeast is raised to it, not refused");
});

test("booleans, lists, enums, URLs and custom parsers", () => {
  for (const v of ["1", "true", "YES", "on"]) assert.equal(read({ T_FLAG: v }).flag, true, v);
  for (const v of ["0", "false", "No", "off"]) assert.equal(read({ T_FLAG: v }).flag, false, v);
  assert.throws(() => read({ T_FLAG: "maybe" }), /T_FLAG must be true or false/);
  assert.deepEqual(read({ T_ITEMS: " a, ,b ,," }).items, ["a", "b"]);
  assert.equal(read({ T_MODE: "b" }).mode, "b");
  assert.throws(() => read({ T_MODE: "c" }), /T_MODE must be 'a' or 'b', got 'c'/);
  assert.equal(read({ T_URL: "https://example.test/base//" }).url, "https://example.test/base");
  assert.throws(() => read({ T_URL: "ftp://example.test" }), /T_URL must be an http:\/\/ or https:\/\/ URL/);
  assert.deepEqual(read({ T_JSON: '{"n":3}' }).json, { n: 3 });
  assert.throws(() => read({ T_JSON: '{"m":3}' }), /^Error: T_JSON: needs n$/);
});

test("a default list or object is never shared between two reads", () => {
  const a = read({});
  a.items.push("changed");
  assert.deepEqual(read({}).items, []);
});

test("the service's settings keep today's names, defaults and rules", () => {
  const c = loadConfig({ AGENTBOX_DATA_DIR: "/tmp/d" }, machine);
  const sb = (env: NodeJS.ProcessEnv) => sandboxSettings(c.dataDir, env, machine);
  const s = sb({});
  assert.equal(c.port, 8080);
  assert.equal(c.dataDir, "/tmp/d");
  assert.equal(s.snapshotDir, "/tmp/d/snapshots");
  assert.match(c.workspaceDir, /^\/run\/agentbox\/[0-9a-f]{16}$/);
  assert.equal(s.maxConcurrentRuns, 128);
  assert.equal(c.rateLimitPerMinute, 120_000);
  assert.equal(s.maxSandboxes, 1024);
  assert.equal(s.warmPool, 40);
  assert.equal(s.warmPoolMax, 102);
  assert.equal(c.maxConnections, 2048);
  assert.equal(c.maxConnectionsPerAddress, 256);
  assert.equal(s.tenantProcesses, 10000);
  assert.equal(s.vectorMemoryMb, 2048);
  assert.equal(s.tenantVectorStorageMb, 1024);
  assert.equal(s.defaultRunTimeoutS, 30);
  assert.deepEqual(s.limits, { memoryMb: 1024, pids: 256, cpus: 1, diskMb: 1024, tmpMb: 256, outputBytes: 10 * 2 ** 20 });
  assert.equal(sb({ AGENTBOX_SANDBOX_CPUS: "1.5" }).limits.cpus, 1.5);
  assert.equal(sb({ AGENTBOX_VECTOR_MEMORY_MB: "100" }).tenantVectorStorageMb, 50);
  assert.equal(loadConfig({ AGENTBOX_ROOT_ALIASES: "1" }, machine).mountRootAliases, true);
  assert.throws(() => loadConfig({ AGENTBOX_PORT: "-1" }, machine), /AGENTBOX_PORT must be a non-negative number, got '-1'/);
});

test("the areas' settings keep today's names, defaults and rules", () => {
  assert.equal(eventSettings({}).perSandbox, 200);
  assert.throws(() => eventSettings({ AGENTBOX_EVENTS_PER_SANDBOX: "5" }), /AGENTBOX_EVENTS_PER_SANDBOX must be an integer >= 10, got '5'/);
  assert.equal(eventSettings({ AGENTBOX_WEBHOOK_ALLOW_PRIVATE: "1" }).webhookAllowPrivate, true);
  assert.deepEqual(vectorSettings({}), { searchEf: 48, saveIdleS: 30, targetRecall: 0.97, unindexedMb: 8, releaseS: 30 });
  assert.throws(
    () => vectorSettings({ AGENTBOX_VECTOR_TARGET_RECALL: "0.2" }),
    /AGENTBOX_VECTOR_TARGET_RECALL must be a number from 0.5 to 1/,
  );
  assert.throws(() => vectorSettings({ AGENTBOX_VECTOR_SEARCH_EF: "5000" }), /AGENTBOX_VECTOR_SEARCH_EF must be an integer from 1 to 4096/);
  const net = networkSettings({ AGENTBOX_EGRESS_LOG_ENTRIES: "0", AGENTBOX_PUBLIC_URL: "https://box.test/" });
  assert.equal(net.logEntries, 1);
  assert.equal(net.publicUrl, "https://box.test");
  assert.deepEqual(networkSettings({ AGENTBOX_EGRESS_MAX_CONNECTIONS_TOTAL: "40" }).connections, {
    total: 40,
    perTenant: 40,
    perSandbox: 40,
  });
  const files = loadFilesConfig("/tmp/d", { AGENTBOX_S3_PREFIX: "" });
  assert.equal(files.dir, "/tmp/d/files");
  assert.equal(files.s3.prefix, "");
  assert.equal(files.s3.forcePathStyle, true);
  assert.equal(loadFilesConfig("/tmp/d", { AGENTBOX_FILES_REAPER_INTERVAL_MS: "1" }).reaperIntervalMs, 50);
  assert.throws(
    () => loadFilesConfig("/tmp/d", { AGENTBOX_FILES_BACKEND: "ftp" }),
    /AGENTBOX_FILES_BACKEND must be 'local' or 's3', got 'ftp'/,
  );
  assert.throws(() => loadFilesConfig("/tmp/d", { AGENTBOX_FILES_BACKEND: "s3" }), /needs AGENTBOX_S3_BUCKET/);
  assert.equal(files.s3.snapshotsPrefix, "snapshots/");
  assert.throws(
    () => loadFilesConfig("/tmp/d", { AGENTBOX_FILES_BACKEND: "s3", AGENTBOX_S3_BUCKET: "b", AGENTBOX_S3_SNAPSHOTS_PREFIX: "files/snap-" }),
    /AGENTBOX_S3_SNAPSHOTS_PREFIX must not put snapshot archives among the stored files/,
  );
  const d = loadDeploymentsConfig({ AGENTBOX_DEPLOYMENT_QUEUE_TIMEOUT_S: "2", AGENTBOX_REPLICA_THREADS: "0" });
  assert.equal(d.queueTimeoutMs, 2000);
  assert.equal(d.threads, undefined);
  assert.equal(d.replicaUid, 65534);
  assert.equal(loadDeploymentsConfig({ AGENTBOX_REPLICA_UID: "-1" }).replicaUid, undefined);
  assert.throws(() => loadDeploymentsConfig({ AGENTBOX_REPLICA_UID: "x" }), /AGENTBOX_REPLICA_UID must be a uid/);
});
