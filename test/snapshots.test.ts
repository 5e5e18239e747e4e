// End to end: snapshots, restores and forks. A snapshot of /home/user is restored byte for byte
// (modes, hard links, names with newlines, symlinks kept as links, one pointing at a host file that
// must never be read on the host); the settings come along; kernel state is said to be lost;
// another tenant's snapshot is a 404; fork makes copies within its limit; a snapshot that fails
// (too large, the snapshot disk full) leaves no record and no file; on_timeout "snapshot" and a
// sandbox paused past the operator's limit end up in snapshots a resume or create starts from; and
// snapshots count against the tenant's storage quota with its stored files (a manual one past it is
// a 429 leaving nothing, an on_timeout one ends the sandbox without it, a long pause stays a pause).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError, createSandbox, sandboxEvents } from "./helpers/api.js";
import { createKey, eventually, processesInCgroups } from "./helpers/leftovers.js";
import { multipartUpload, patternChunks } from "./helpers/multipart.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface SnapshotBody {
  snapshot_id: string;
  sandbox_id: string;
  kind: string;
  created_at: string;
  size_bytes: number;
  files: number;
  sha256: string;
}

let server: TestServer;
let call: ReturnType<typeof client>;
let snapshotDir: string;
let canaryFile: string;
const canary = `host-secret-${crypto.randomBytes(8).toString("hex")}`;
/** The snapshot disk: a small tmpfs, so that "disk full" is real. */
const SNAPSHOT_DISK_MB = 6;

const serverEnv = () => ({
  AGENTBOX_SNAPSHOT_DIR: snapshotDir,
  AGENTBOX_SNAPSHOT_MAX_BYTES: String(16 * 2 ** 20),
  AGENTBOX_PAUSED_MAX_S: "1",
  AGENTBOX_SNAPSHOTS_PER_TENANT: "3",
});

before(async () => {
  snapshotDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-snapdisk-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${SNAPSHOT_DISK_MB}m,mode=700`, "tmpfs", snapshotDir]);
  canaryFile = path.join(os.tmpdir(), `agentbox-canary-${crypto.randomBytes(4).toString("hex")}`);
  fs.writeFileSync(canaryFile, canary);
  server = await startServer({ env: serverEnv() });
  call = client(server);
});

after(async () => {
  await server?.dispose();
  execFileSync("umount", ["-l", snapshotDir]);
  fs.rmSync(snapshotDir, { recursive: true, force: true });
  fs.rmSync(canaryFile, { force: true });
});

async function sh(id: string, command: string, c = call): Promise<string> {
  const res = await c<{ stdout: string; stderr: string; exit_code: number }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
    command,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.exit_code, 0, JSON.stringify(res.body));
  return res.body.stdout;
}

/** Pauses a sandbox; an answer other than 200 fails with its body (what the service said, not just a status). */
async function paused(c: typeof call, id: string): Promise<void> {
  const res = await c("POST", `/v1/agents/sandboxes/${id}/pause`);
  assert.equal(res.status, 200, `pause: ${res.status} ${JSON.stringify(res.body)}`);
}

/** Everything about /home/user that a restore must reproduce, listed inside the sandbox. */
const MANIFEST = `python3 - <<'EOF'
import hashlib, json, os, stat
out = []
inodes = {}
for root, dirs, files in os.walk("/home/user"):
    dirs.sort()
    for name in sorted(dirs + files):
        p = os.path.join(root, name)
        st = os.lstat(p)
        e = {"path": os.path.relpath(p, "/home/user"), "mode": oct(st.st_mode)}
        if stat.S_ISREG(st.st_mode):
            e["sha"] = hashlib.sha256(open(p, "rb").read()).hexdigest()
            e["links"] = inodes.setdefault(st.st_ino, e["path"]) if st.st_nlink > 1 else None
        elif stat.S_ISLNK(st.st_mode):
            e["target"] = os.readlink(p)
        out.append(e)
print(json.dumps(out))
EOF`;

const snapshotOf = (id: string, c = call) => c<SnapshotBody>("POST", `/v1/agents/sandboxes/${id}/snapshots`);
const listSnapshots = (c = call) => c<{ snapshots: SnapshotBody[]; total: number }>("GET", "/v1/agents/snapshots");
const hostFiles = () => fs.readdirSync(snapshotDir).sort();

describe("snapshots", () => {
  let source: string;
  let snap: SnapshotBody;

  test("a snapshot restores byte for byte, symlinks kept as links and never followed on the host", async () => {
    source = await createSandbox(call, { env_vars: { GREETING: "hello" }, metadata: { owner: "t1" } });
    await sh(
      source,
      [
        "mkdir -p a/b/c && head -c 300000 /dev/urandom > a/b/c/random.bin",
        "printf 'x' > 'new\nline.txt' && : > empty && printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 750 run.sh",
        "ln a/b/c/random.bin hard.bin",
        `ln -s ${canaryFile} outside-link && ln -s /etc/passwd etc-link && ln -s a/b inner-link && ln -s missing dangling`,
        "mkfifo pipe",
      ].join(" && "),
    );
    const before = JSON.parse(await sh(source, MANIFEST)) as { path: string }[];
    const created = await snapshotOf(source);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    snap = created.body;
    assert.match(snap.snapshot_id, /^snap_/);
    assert.equal(snap.sandbox_id, source);
    assert.equal(snap.kind, "manual");
    assert.ok(snap.size_bytes > 300_000 && snap.files >= 10, JSON.stringify(snap));
    // On disk, complete and as announced; the host file the link points to was never read.
    const file = path.join(snapshotDir, `${snap.snapshot_id}.tar`);
    const bytes = fs.readFileSync(file);
    assert.equal(bytes.length, snap.size_bytes);
    assert.equal(crypto.createHash("sha256").update(bytes).digest("hex"), snap.sha256);
    assert.ok(!bytes.includes(canary), "the archive holds the link, not the host file's content");
    assert.deepEqual(
      hostFiles().filter((f) => f.endsWith(".tmp")),
      [],
    );

    const restored = await call<{ sandbox_id: string; kernel_state: string; metadata: Record<string, unknown> }>(
      "POST",
      "/v1/agents/sandboxes",
      {
        snapshot_id: snap.snapshot_id,
      },
    );
    assert.equal(restored.status, 201, JSON.stringify(restored.body));
    assert.equal(restored.body.kernel_state, "lost");
    assert.deepEqual(restored.body.metadata, { owner: "t1" });
    const copy = restored.body.sandbox_id;
    const after = JSON.parse(await sh(copy, MANIFEST)) as { path: string }[];
    assert.deepEqual(
      after,
      before.filter((e) => e.path !== "pipe"),
      "files, modes, links and hard links are identical (the FIFO is left out)",
    );
    assert.equal((await sh(copy, "echo $GREETING")).trim(), "hello", "the snapshot's env_vars apply");
    assert.equal((await sh(copy, "./run.sh")).trim(), "hi");
    await call("DELETE", `/v1/agents/sandboxes/${copy}`);
  });

  test("the unpacker refuses hostile archives (absolute, .., devices, writes below a symlink, outside hard links)", async () => {
    const id = await createSandbox(call);
    // Each archive is built and fed to the unpacker inside the sandbox, as a restore does.
    const verdicts = await sh(
      id,
      `python3 - <<'EOF'
import io, json, subprocess, tarfile
def archive(*members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, target in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                info.linkname = target
            data = b"planted" if kind == tarfile.REGTYPE else None
            if data:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buf.getvalue()
cases = {
    "absolute": archive(("/tmp/abs-planted", tarfile.REGTYPE, None)),
    "dotdot": archive(("a/../../tmp/dotdot-planted", tarfile.REGTYPE, None)),
    "device": archive(("dev-null", tarfile.CHRTYPE, None)),
    "below_symlink": archive(("link", tarfile.SYMTYPE, "/tmp"), ("link/sym-planted", tarfile.REGTYPE, None)),
    "hardlink_out": archive(("h", tarfile.LNKTYPE, "../../etc/passwd")),
    "fine": archive(("ok.txt", tarfile.REGTYPE, None), ("to-etc", tarfile.SYMTYPE, "/etc/passwd")),
}
out = {}
for name, data in cases.items():
    p = subprocess.run(["python3", "-I", "/opt/agentbox/archive_tool.py", "extract", "0"], input=data, capture_output=True)
    out[name] = [p.returncode, json.loads(p.stderr.decode().strip().splitlines()[-1]).get("kind", "ok")]
print(json.dumps(out))
EOF`,
    );
    const got = JSON.parse(verdicts) as Record<string, [number, string]>;
    for (const name of ["absolute", "dotdot", "device", "below_symlink", "hardlink_out"]) {
      assert.deepEqual(got[name], [1, "invalid"], `${name}: ${JSON.stringify(got)}`);
    }
    assert.deepEqual(got.fine, [0, "ok"]);
    assert.equal((await sh(id, "ls /tmp | grep -c planted || true")).trim(), "0", "nothing was written outside /home/user");
    assert.equal((await sh(id, "readlink to-etc && cat ok.txt")).trim(), "/etc/passwd\nplanted");
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("snapshots are listed per tenant; another tenant's id is a 404 everywhere", async () => {
    const list = await listSnapshots();
    assert.ok(list.body.snapshots.some((s) => s.snapshot_id === snap.snapshot_id));
    assert.equal((await call<SnapshotBody>("GET", `/v1/agents/snapshots/${snap.snapshot_id}`)).body.sha256, snap.sha256);

    const other = client({ url: server.url, key: createKey(server.dataDir, "other", "tenant-other").key });
    assert.equal((await listSnapshots(other)).body.total, 0);
    assertError(await other("GET", `/v1/agents/snapshots/${snap.snapshot_id}`), 404, "snapshot_not_found");
    assertError(await other("DELETE", `/v1/agents/snapshots/${snap.snapshot_id}`), 404, "snapshot_not_found");
    assertError(await other("POST", "/v1/agents/sandboxes", { snapshot_id: snap.snapshot_id }), 404, "snapshot_not_found");
    assertError(await other("POST", `/v1/agents/sandboxes/${source}/fork`, { count: 1 }), 404, "sandbox_not_found");
    assertError(await other("POST", `/v1/agents/sandboxes/${source}/snapshots`), 404, "sandbox_not_found");
    assertError(await call("POST", "/v1/agents/sandboxes", { snapshot_id: "snap_nope" }), 404, "snapshot_not_found");

    // The per-tenant cap (3 here) counts the other tenant's snapshots only.
    const mine = await createSandbox(other);
    const kept: string[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await snapshotOf(mine, other);
      assert.equal(s.status, 201, JSON.stringify(s.body));
      kept.push(s.body.snapshot_id);
    }
    assertError(await snapshotOf(mine, other), 429, "quota_exceeded");
    assert.equal((await other("DELETE", `/v1/agents/snapshots/${kept[0]}`)).status, 200);
    assert.equal((await snapshotOf(mine, other)).status, 201, "room again after a delete");
    // A fork counts against the tenant's sandbox quota as a whole: 1 live + 2 copies > 2.
    const admin = client({ url: server.url, key: server.adminKey });
    assert.equal((await admin("PUT", "/v1/admin/tenants/tenant-other", { max_sandboxes: 2 })).status, 200);
    assertError(await other("POST", `/v1/agents/sandboxes/${mine}/fork`, { count: 2 }), 429, "quota_exceeded");
    assert.equal((await listSnapshots(other)).body.total, 3, "a refused fork leaves nothing");
    await other("DELETE", `/v1/agents/sandboxes/${mine}`);
  });

  test("fork makes copies with the files and settings (network policy included), within its limit", async () => {
    const policy = { internet_access: false, allow_out: ["pypi.org", "*.pythonhosted.org"], deny_out: [] };
    assert.equal((await call("PUT", `/v1/agents/sandboxes/${source}/network`, policy)).status, 200);
    const forked = await call<{ sandboxes: { sandbox_id: string; metadata: Record<string, unknown> }[]; kernel_state: string }>(
      "POST",
      `/v1/agents/sandboxes/${source}/fork`,
      { count: 3 },
    );
    assert.equal(forked.status, 201, JSON.stringify(forked.body));
    assert.equal(forked.body.kernel_state, "lost");
    assert.equal(forked.body.sandboxes.length, 3);
    const sum = (await sh(source, "sha256sum a/b/c/random.bin")).split(" ")[0];
    for (const s of forked.body.sandboxes) {
      assert.notEqual(s.sandbox_id, source);
      assert.deepEqual(s.metadata, { owner: "t1" });
      const net = await call<{ allow_out: string[] }>("GET", `/v1/agents/sandboxes/${s.sandbox_id}/network`);
      assert.deepEqual(net.body.allow_out, policy.allow_out, "the copy has the source's network policy");
      assert.equal((await sh(s.sandbox_id, "sha256sum a/b/c/random.bin")).split(" ")[0], sum);
      await call("DELETE", `/v1/agents/sandboxes/${s.sandbox_id}`);
    }
    assertError(await call("POST", `/v1/agents/sandboxes/${source}/fork`, { count: 11 }), 400, "invalid_request");
    assertError(await call("POST", `/v1/agents/sandboxes/${source}/fork`, { count: 0 }), 400, "invalid_request");
    assert.deepEqual(
      hostFiles().filter((f) => f.startsWith("fork_")),
      [],
      "the fork's archive is removed",
    );
  });

  test("a snapshot that fails leaves no record and no file", async () => {
    const filesBefore = hostFiles();
    const totalBefore = (await listSnapshots()).body.total;
    // The snapshot disk (6 MiB, one snapshot of ~0.6 MB on it) cannot take 7 MB: ENOSPC mid-write.
    await sh(source, "head -c 7000000 /dev/urandom > big.bin");
    const full = await snapshotOf(source);
    assertError(full, 507, "insufficient_storage");
    // Over the snapshot size limit: refused inside the sandbox before a byte is sent.
    await sh(source, "truncate -s 20M sparse.bin");
    const large = await snapshotOf(source);
    assertError(large, 413, "payload_too_large");
    assert.equal((await listSnapshots()).body.total, totalBefore);
    assert.deepEqual(hostFiles(), filesBefore);
    await sh(source, "rm big.bin sparse.bin");
  });

  test("deleting a snapshot removes its record and its file", async () => {
    const extra = await snapshotOf(source);
    assert.equal(extra.status, 201, JSON.stringify(extra.body));
    assert.ok(hostFiles().includes(`${extra.body.snapshot_id}.tar`), JSON.stringify([hostFiles(), extra.body]));
    assert.equal((await call("DELETE", `/v1/agents/snapshots/${extra.body.snapshot_id}`)).status, 200);
    assert.ok(!hostFiles().includes(`${extra.body.snapshot_id}.tar`));
    assertError(await call("GET", `/v1/agents/snapshots/${extra.body.snapshot_id}`), 404, "snapshot_not_found");
  });

  test("on_timeout snapshot: at its deadline the sandbox's files go to a snapshot and it ends", async () => {
    const id = await createSandbox(call, { timeout: 2, lifecycle: { on_timeout: "snapshot" } });
    await sh(id, "echo kept > note.txt");
    let taken: SnapshotBody | undefined;
    assert.ok(
      await eventually(
        async () => {
          taken = (await listSnapshots()).body.snapshots.find((s) => s.sandbox_id === id && s.kind === "timeout");
          return taken !== undefined && (await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.status === "timed_out";
        },
        15_000,
        200,
      ),
      "a timeout snapshot exists and the sandbox timed out",
    );
    const restored = await createSandbox(call, { snapshot_id: taken?.snapshot_id });
    assert.equal((await sh(restored, "cat note.txt")).trim(), "kept");
    await call("DELETE", `/v1/agents/sandboxes/${restored}`);
  });

  test("paused past the limit: files to a snapshot, processes ended; a resume brings the files back, not the kernel", async () => {
    const id = await createSandbox(call);
    await sh(id, "echo still-here > paused.txt");
    assert.equal((await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { code: "z = 1", language: "python" })).status, 200);
    await paused(call, id);
    assert.ok(
      await eventually(
        async () =>
          (await listSnapshots()).body.snapshots.some((s) => s.sandbox_id === id && s.kind === "hibernate") &&
          processesInCgroups(id).length === 0,
        15_000,
        200,
      ),
      "the paused sandbox was snapshotted and its processes ended",
    );
    assert.equal((await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.status, "paused");
    assertError(await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "true" }), 409, "sandbox_paused");
    const resumed = await call<{ status: string; kernel_state: string }>("POST", `/v1/agents/sandboxes/${id}/resume`);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    assert.equal(resumed.body.status, "running");
    assert.equal(resumed.body.kernel_state, "lost");
    assert.equal((await sh(id, "cat paused.txt")).trim(), "still-here");
    const run = await call<{ error: string | null }>("POST", `/v1/agents/sandboxes/${id}/code/run`, { code: "z", language: "python" });
    assert.match(run.body.error ?? "", /^NameError/, "the kernel state was lost, and said so");
    assert.ok(!(await listSnapshots()).body.snapshots.some((s) => s.sandbox_id === id && s.kind === "hibernate"), "its snapshot is gone");
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("a restart of the service keeps long-paused sandboxes waiting and on_timeout as it was", async () => {
    const later = await createSandbox(call, { timeout: 600, lifecycle: { on_timeout: "snapshot" } });
    await sh(later, "echo at-timeout > t.txt");
    const sleeper = await createSandbox(call);
    await sh(sleeper, "echo across-restart > r.txt");
    await paused(call, sleeper);
    assert.ok(
      await eventually(
        async () => (await listSnapshots()).body.snapshots.some((s) => s.sandbox_id === sleeper && s.kind === "hibernate"),
        15_000,
        200,
      ),
    );
    await server.stop();
    server = await startServer({ env: serverEnv(), dataDir: server.dataDir, key: server.key });
    call = client(server);
    assert.equal((await call<{ status: string }>("GET", `/v1/agents/sandboxes/${sleeper}`)).body.status, "paused");
    const resumed = await call<{ kernel_state: string }>("POST", `/v1/agents/sandboxes/${sleeper}/resume`);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    assert.equal(resumed.body.kernel_state, "lost");
    assert.equal((await sh(sleeper, "cat r.txt")).trim(), "across-restart");
    // The re-adopted sandbox still snapshots at its deadline.
    assert.equal((await call("POST", `/v1/agents/sandboxes/${later}/timeout`, { timeout: 1 })).status, 200);
    assert.ok(
      await eventually(
        async () => (await listSnapshots()).body.snapshots.some((s) => s.sandbox_id === later && s.kind === "timeout"),
        15_000,
        200,
      ),
      "on_timeout snapshot survived the restart",
    );
    await call("DELETE", `/v1/agents/sandboxes/${sleeper}`);
  });
});

describe("snapshots and the tenant's storage quota", () => {
  /** tenant-storage: storage_mb 1 (1 MiB), set by the operator through the admin API. */
  let t: ReturnType<typeof client>;
  let tKey: string;
  /** A snapshot of ~600 KB the tenant keeps for the tests after the first: over half its quota. */
  let kept: SnapshotBody;
  const FILL = "head -c 600000 /dev/urandom > fill.bin";

  before(async () => {
    tKey = createKey(server.dataDir, "storage", "tenant-storage").key;
    t = client({ url: server.url, key: tKey });
    const admin = client({ url: server.url, key: server.adminKey });
    assert.equal((await admin("PUT", "/v1/admin/tenants/tenant-storage", { storage_mb: 1 })).status, 200);
  });

  test("a snapshot past storage_mb is a 429 that keeps nothing; stored files share the quota; deleting frees it", async () => {
    const id = await createSandbox(t);
    await sh(id, FILL, t);
    const first = await snapshotOf(id, t);
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.ok(first.body.size_bytes > 600_000);
    const before = hostFiles();
    const over = await snapshotOf(id, t);
    assert.match(assertError(over, 429, "quota_exceeded").error.message, /Storage quota exceeded.*1 MiB/);
    assert.ok(Number(over.headers.get("retry-after")) > 0, "a Retry-After comes with the refusal");
    assert.deepEqual(hostFiles(), before, "no archive and no partial file is left");
    assert.equal((await listSnapshots(t)).body.total, 1);
    // Stored files and snapshots are one quota: 600 KB more does not fit next to the snapshot.
    const file = await multipartUpload({
      port: server.port,
      path: "/v1/files",
      key: tKey,
      before: { purpose: "batch" },
      file: { filename: "more.bin", size: 600_000, chunks: patternChunks(600_000) },
    });
    assertError(file, 429, "quota_exceeded");
    // Deleting the snapshot frees its room: the same snapshot fits again.
    assert.equal((await t("DELETE", `/v1/agents/snapshots/${first.body.snapshot_id}`)).status, 200);
    const again = await snapshotOf(id, t);
    assert.equal(again.status, 201, JSON.stringify(again.body));
    kept = again.body;
    await t("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("snapshots written at the same time are counted against each other", async () => {
    assert.equal((await t("DELETE", `/v1/agents/snapshots/${kept.snapshot_id}`)).status, 200);
    const ids = [await createSandbox(t), await createSandbox(t)];
    for (const id of ids) await sh(id, FILL, t);
    const before = hostFiles();
    const both = await Promise.all(ids.map((id) => snapshotOf(id, t)));
    const made = both.filter((r) => r.status === 201);
    assert.equal(made.length, 1, JSON.stringify(both.map((r) => r.status)));
    assertError(both.find((r) => r.status !== 201) ?? { status: 0, body: {} }, 429, "quota_exceeded");
    kept = made[0]?.body as SnapshotBody;
    assert.deepEqual(hostFiles(), [...before, `${kept.snapshot_id}.tar`].sort(), "only the snapshot that fit is on disk");
    for (const id of ids) await t("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("on_timeout snapshot past the quota: the sandbox ends without one and its ended event says why", async () => {
    const before = hostFiles();
    const id = await createSandbox(t, { timeout: 2, lifecycle: { on_timeout: "snapshot" } });
    await sh(id, FILL, t);
    assert.ok(
      await eventually(
        async () => (await t<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.status === "timed_out",
        15_000,
        200,
      ),
      "the sandbox timed out",
    );
    assert.ok(!(await listSnapshots(t)).body.snapshots.some((s) => s.sandbox_id === id), "no snapshot of it");
    const ended = (await sandboxEvents(t, id)).body.find((e) => e.type === "ended");
    assert.equal(ended?.reason, "timed_out");
    const why = ended?.detail.snapshot_error as { code: string; message: string } | undefined;
    assert.equal(why?.code, "quota_exceeded", JSON.stringify(ended));
    assert.match(why?.message ?? "", /Storage quota exceeded/);
    assert.deepEqual(hostFiles(), before, "nothing of the refused archive is left");
  });

  test("paused past the limit over the quota: it stays paused with its kernel, an event says why; room freed, it hibernates", async () => {
    const id = await createSandbox(t);
    await sh(id, FILL, t);
    assert.equal((await t("POST", `/v1/agents/sandboxes/${id}/code/run`, { code: "z = 41", language: "python" })).status, 200);
    await paused(t, id);
    const refusal = async () =>
      (await sandboxEvents(t, id)).body.find((e) => e.type === "paused" && e.detail.reason === "hibernate_failed");
    assert.ok(await eventually(async () => (await refusal()) !== undefined, 15_000, 200), "a paused event says the snapshot failed");
    const error = (await refusal())?.detail.error as { code: string } | undefined;
    assert.equal(error?.code, "quota_exceeded");
    assert.ok(!(await listSnapshots(t)).body.snapshots.some((s) => s.sandbox_id === id), "no hibernation snapshot");
    assert.ok(processesInCgroups(id).length > 0, "its processes are kept (frozen)");
    assert.equal((await t<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.status, "paused");
    const resumed = await t<{ kernel_state: string }>("POST", `/v1/agents/sandboxes/${id}/resume`);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    assert.equal(resumed.body.kernel_state, "preserved");
    const run = await t<{ error: string | null; results: { text?: string }[] }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      code: "z + 1",
      language: "python",
    });
    assert.equal(run.body.error, null, JSON.stringify(run.body));
    assert.equal(run.body.results[0]?.text, "42", "the kernel kept its state");
    // Once the tenant deletes its snapshot, the next attempt hibernates it.
    await paused(t, id);
    assert.equal((await t("DELETE", `/v1/agents/snapshots/${kept.snapshot_id}`)).status, 200);
    assert.ok(
      await eventually(
        async () => (await listSnapshots(t)).body.snapshots.some((s) => s.sandbox_id === id && s.kind === "hibernate"),
        15_000,
        200,
      ),
      "hibernated once there is room",
    );
    assert.equal((await t("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  });
});
