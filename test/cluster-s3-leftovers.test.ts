// Nodes of a cluster sharing one S3 bucket (a private Redis, a shared SQLite file, a real S3 server
// on loopback): a node that starts cleans up only what is old enough to be an interrupted write's
// leftover (AGENTBOX_S3_LEFTOVER_AGE_S). A file upload streaming into node A, its multipart upload
// open in the bucket, survives node B's start and completes whole; an object stored a moment ago
// with no record yet survives too; a stale upload and a stale orphaned object are removed.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, test } from "node:test";
import { CreateMultipartUploadCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { until } from "./helpers/leftovers.js";
import { multipartUpload, patternChunks, patternSha256 } from "./helpers/multipart.js";
import { startS3, type TestS3 } from "./helpers/s3.js";

const BUCKET = "agentbox-leftovers";
const MiB = 2 ** 20;
const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;

let s3: TestS3;
let cluster: TestCluster;

before(async () => {
  s3 = await startS3(BUCKET);
  cluster = await startCluster({ leaseMs: 15_000 });
});

after(async () => {
  await cluster?.dispose();
  await s3?.stop();
});

test("a node's start aborts stale uploads and orphans only, not another node's upload in flight", async () => {
  // API-only nodes: stored files need no sandbox.
  const a = await cluster.node("node-a", "api", s3.env);

  // Leftovers of an interrupted earlier run: an upload begun two days ago, an object of then with no record.
  const stale = await s3.client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: "files/file_stale_upload" }));
  s3.uploads.age(stale.UploadId as string, 2 * DAY_MS);
  await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: "files/file_stale_orphan", Body: "old" }));
  s3.uploads.ageObject("files/file_stale_orphan", 2 * DAY_MS);
  // Stored a moment ago by a node that records it next: not an orphan yet.
  await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: "files/file_just_stored", Body: "new" }));

  // An upload into node A, held after its first part went to the bucket as a multipart upload.
  const size = 12 * MiB + 5;
  const seed = crypto.randomBytes(MiB);
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const upload = multipartUpload({
    port: a.port,
    path: "/v1/files",
    key: cluster.key,
    before: { purpose: "batch" },
    file: { filename: "big.bin", size, chunks: patternChunks(size, seed) },
    hold: { after: 7 * MiB, until: held },
  });
  const inFlight = await until("node A's upload open in the bucket", 60_000, async () =>
    s3.uploads.list().find((u) => u.key !== "files/file_stale_upload"),
  );

  const b = await cluster.node("node-b", "api", s3.env);
  try {
    assert.deepEqual(
      s3.uploads.list().map((u) => u.uploadId),
      [inFlight.uploadId],
      "the stale upload is aborted, node A's is not",
    );
    const keys = await s3.keys();
    assert.ok(!keys.includes("files/file_stale_orphan"), `the stale orphan is removed: ${keys}`);
    assert.ok(keys.includes("files/file_just_stored"), `the object stored a moment ago is kept: ${keys}`);
  } finally {
    release();
  }

  const done = await upload;
  assert.equal(done.status, 200, JSON.stringify(done.body));
  const file = done.body as { id: string; bytes: number; sha256: string };
  assert.equal(file.sha256, patternSha256(size, seed));
  // Read back whole through node B.
  const res = await fetch(`${b.url}/v1/files/${file.id}/content`, { headers: { authorization: `Bearer ${cluster.key}` } });
  assert.equal(res.status, 200);
  assert.equal(
    crypto
      .createHash("sha256")
      .update(Buffer.from(await res.arrayBuffer()))
      .digest("hex"),
    file.sha256,
  );
  assert.deepEqual(s3.uploads.list(), []);
});
