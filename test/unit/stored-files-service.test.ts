// The stored-files service on a real SQLite database and local storage (no HTTP, no sandboxes):
// concurrent uploads of one tenant cannot together pass its quota, not even with the bytes they are
// still receiving (what they stage on disk at once stays within it; snapshots count too),
// a failed source leaves nothing, the reaper removes expired files, start-up sweeps leftovers.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { after, test } from "node:test";
import { pino } from "pino";
import { ApiError } from "../../src/errors.js";
import type { FilesConfig } from "../../src/files/settings.js";
import { openStorageQuota } from "../../src/files/setup.js";
import { FileService } from "../../src/files/service.js";
import { LocalStorage } from "../../src/files/storage.js";
import { openDb } from "../../src/store/db.js";
import { SqliteFileStore } from "../../src/files/store.js";
import { SqliteSnapshotStore } from "../../src/sandbox/store/snapshots.js";
import { TenantDirectory } from "../../src/tenancy/tenant-directory.js";
import { SqliteTenantStore } from "../../src/tenancy/store/tenants.js";

const MiB = 2 ** 20;
const dirs: string[] = [];

after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A file service over local storage and the given database; it has no sandboxes to import from or export to. */
async function fileService(config: FilesConfig, store: SqliteFileStore, db: ReturnType<typeof openDb>): Promise<FileService> {
  return new FileService({
    config,
    store,
    storage: new LocalStorage(config.dir),
    quota: await openStorageQuota(
      config,
      { kind: "sqlite", db, nodeId: "n1" },
      await TenantDirectory.open(new SqliteTenantStore(db)),
      new SqliteSnapshotStore(db),
    ),
    box: async () => {
      throw new Error("no sandboxes here");
    },
    log: pino({ level: "silent" }),
  });
}

async function service(overrides: Partial<FilesConfig> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-files-unit-"));
  dirs.push(dir);
  const db = openDb(dir);
  const config: FilesConfig = {
    backend: "local",
    dir: path.join(dir, "files"),
    s3: {
      endpoint: undefined,
      bucket: "",
      region: "",
      prefix: "",
      snapshotsPrefix: "snapshots/",
      forcePathStyle: true,
      accessKeyId: undefined,
      secretAccessKey: undefined,
      leftoverAgeMs: 0,
    },
    maxFileBytes: 8 * MiB,
    tenantQuotaMb: 4,
    maxExpirySeconds: 3600,
    reaperIntervalMs: 3_600_000,
    maxFilesPerTenant: 3,
    ...overrides,
  };
  const store = new SqliteFileStore(db);
  const files = await fileService(config, store, db);
  await files.init();
  return { files, store, config, db };
}

/**
 * `size` bytes in 64 KiB pieces, yielding to the event loop between pieces (so uploads interleave);
 * `beforePiece` runs before each piece is handed over.
 */
function slowSource(size: number, beforePiece: () => void = () => {}): Readable {
  return Readable.from(
    (async function* () {
      for (let sent = 0; sent < size; sent += 64 * 1024) {
        await new Promise((r) => setImmediate(r));
        beforePiece();
        yield Buffer.alloc(Math.min(64 * 1024, size - sent), 7);
      }
    })(),
  );
}

async function upload(files: FileService, tenant: string, size: number, beforePiece?: () => void) {
  const staged = await files.receive(tenant, slowSource(size, beforePiece));
  return files.commit(tenant, staged, { filename: "f.bin", purpose: "batch" });
}

/** Bytes of the uploads in progress on disk (the local backend's tmp/). */
function stagedBytes(dir: string): number {
  const tmp = path.join(dir, "tmp");
  return fs.readdirSync(tmp).reduce((n, f) => n + (fs.statSync(path.join(tmp, f), { throwIfNoEntry: false })?.size ?? 0), 0);
}

test("two concurrent uploads cannot together pass the tenant's quota; the refused one leaves nothing", async () => {
  const { files, store, config } = await service();
  const results = await Promise.allSettled([upload(files, "t", 3 * MiB), upload(files, "t", 3 * MiB)]);
  const ok = results.filter((r) => r.status === "fulfilled");
  const refused = results.filter((r) => r.status === "rejected") as PromiseRejectedResult[];
  assert.equal(ok.length, 1);
  assert.equal(refused.length, 1);
  assert.ok(refused[0]?.reason instanceof ApiError && refused[0].reason.code === "quota_exceeded");
  assert.equal((await store.usage("t")).bytes, 3 * MiB);
  // Exactly the stored file is on disk, nothing in tmp.
  assert.equal(fs.readdirSync(path.join(config.dir, "tmp")).length, 0);
  const objects = fs.readdirSync(path.join(config.dir, "objects"), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
  assert.equal(objects.length, 1);
  // 1 MiB more still fits; another tenant is unaffected.
  await upload(files, "t", MiB);
  await upload(files, "other", 4 * MiB);
});

test("uploads in flight are counted against each other: together they never stage more than the quota", async () => {
  const { files, store, config } = await service({ maxFilesPerTenant: 10 });
  let peak = 0;
  const sample = () => {
    peak = Math.max(peak, stagedBytes(config.dir));
  };
  // Four 3 MiB uploads at once into 4 MiB: each would fit alone.
  const results = await Promise.allSettled(Array.from({ length: 4 }, () => upload(files, "t", 3 * MiB, sample)));
  const ok = results.filter((r) => r.status === "fulfilled");
  const refused = results.filter((r) => r.status === "rejected") as PromiseRejectedResult[];
  assert.equal(ok.length, 1, "one fits");
  assert.equal(refused.length, 3);
  for (const r of refused) assert.ok(r.reason instanceof ApiError && r.reason.code === "quota_exceeded", String(r.reason));
  assert.ok(peak > 0, "the staged bytes were seen");
  // A refused upload gives its room back at once, and its file is removed a moment later: the
  // others may stage that much more meanwhile. Counted apart, the four would stage 12 MiB.
  assert.ok(peak <= 5 * MiB, `about the quota at most was staged at once, saw ${peak} bytes`);
  assert.equal((await store.usage("t")).bytes, 3 * MiB);
  assert.equal(fs.readdirSync(path.join(config.dir, "tmp")).length, 0);
  // The refused uploads' room is free again: 1 MiB fits, 1 byte more does not.
  await upload(files, "t", MiB);
  await assert.rejects(upload(files, "t", 1), (e: unknown) => e instanceof ApiError && e.code === "quota_exceeded");
});

test("a source that fails midway is not stored", async () => {
  const { files, config } = await service();
  const failing = Readable.from(
    (async function* () {
      yield Buffer.alloc(2 * MiB);
      throw new Error("connection reset");
    })(),
  );
  await assert.rejects(files.receive("t", failing), /connection reset/);
  // Its staging file is removed as the write fails, which may end a moment after the rejection.
  for (let i = 0; i < 100 && fs.readdirSync(path.join(config.dir, "tmp")).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(fs.readdirSync(path.join(config.dir, "tmp")).length, 0);
  await upload(files, "t", 4 * MiB);
});

test("size limit, file count limit, purpose and expiry checks", async () => {
  const { files } = await service({ maxFileBytes: MiB, tenantQuotaMb: 100 });
  await assert.rejects(upload(files, "t", MiB + 1), (e: unknown) => e instanceof ApiError && e.code === "payload_too_large");
  for (let i = 0; i < 3; i++) await upload(files, "t", 10);
  await assert.rejects(
    upload(files, "t", 10),
    (e: unknown) => e instanceof ApiError && e.code === "quota_exceeded" && /3 files/.test(e.message),
  );
  assert.throws(() => files.checkPurpose("training"), /must be one of/);
  assert.throws(() => files.checkPurpose(undefined), /required/);
  assert.equal(files.checkPurpose("fine-tune"), "fine-tune");
  for (const bad of ["0", "-1", "3601", "1e3", " ", "abc", 2.5]) assert.throws(() => files.parseExpiry(bad), /expires_after/, String(bad));
  assert.equal(files.parseExpiry("3600"), 3600);
  assert.equal(files.parseExpiry(1), 1);
});

test("the reaper deletes expired files (rows and bytes); start-up sweeps temp files and orphans", async () => {
  const { files, store, config, db } = await service();
  const staged = await files.receive("t", slowSource(1000));
  const f = await files.commit("t", staged, { filename: "e.bin", purpose: "batch", expiresAfterS: 60 });
  const keep = await upload(files, "t", 1000);
  assert.ok(await store.get("t", f.id));
  // Hidden once expired, even before the reaper runs.
  assert.equal(await store.get("t", f.id, Date.now() + 61_000), undefined);
  assert.equal(await files.reap(Date.now() + 61_000), 1);
  assert.equal((await store.usage("t")).files, 1);
  await assert.rejects(files.open("t", f.id), (e: unknown) => e instanceof ApiError && e.code === "file_not_found");
  const objects = () =>
    fs
      .readdirSync(path.join(config.dir, "objects"), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => e.name);
  assert.deepEqual(objects(), [keep.id]);

  fs.writeFileSync(path.join(config.dir, "tmp", "partial"), "x");
  fs.mkdirSync(path.join(config.dir, "objects", "zz"), { recursive: true });
  fs.writeFileSync(path.join(config.dir, "objects", "zz", "file-orphanzz"), "x");
  files.close();
  const again = await fileService(config, store, db);
  await again.init();
  again.close();
  assert.deepEqual(fs.readdirSync(path.join(config.dir, "tmp")), []);
  assert.deepEqual(objects(), [keep.id]);
});

test("a full disk is 507 insufficient_storage and leaves nothing", {
  skip: process.getuid?.() !== 0 && "needs root to mount a tmpfs",
}, async () => {
  const { files, config } = await service({ tenantQuotaMb: 100 });
  // The storage directory on a 1 MiB tmpfs: the second MiB cannot be written.
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", config.dir]);
  try {
    await files.init();
    await assert.rejects(upload(files, "t", 2 * MiB), (e: unknown) => e instanceof ApiError && e.code === "insufficient_storage");
    assert.deepEqual(fs.readdirSync(path.join(config.dir, "tmp")), []);
    // Space is back once the failed upload is gone: a small file fits.
    await upload(files, "t", 1000);
  } finally {
    files.close();
    execFileSync("umount", [config.dir]);
  }
});
