// Stored files on the S3-compatible backend, against a real S3 server on loopback (s3rver): a
// multi-part upload (several 5 MiB parts) streamed through and read back whole and by range, the
// objects as the bucket lists them, a cut-off upload leaving no object, delete removing it.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, test } from "node:test";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { multipartUpload, patternChunks, patternSha256 } from "./helpers/multipart.js";
import { startS3, type TestS3 } from "./helpers/s3.js";

const BUCKET = "agentbox-files";
const MiB = 2 ** 20;

let s3: TestS3;
let server: TestServer;

before(async () => {
  s3 = await startS3(BUCKET);
  // This file starts no sandbox: no warm pool (its two sandboxes would take ~1.5 s of CPU from the tests).
  server = await startServer({ env: { AGENTBOX_WARM_POOL: "0", ...s3.env } });
});

after(async () => {
  await server?.dispose();
  await s3?.stop();
});

test("upload, read back (whole and a range), list in the bucket, delete", async () => {
  const size = 12 * MiB + 7;
  const seed = crypto.randomBytes(MiB);
  const up = await multipartUpload({
    port: server.port,
    path: "/v1/files",
    key: server.key,
    before: { purpose: "batch" },
    file: { filename: "big.jsonl", size, chunks: patternChunks(size, seed) },
  });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  const f = up.body as { id: string; bytes: number; sha256: string };
  assert.equal(f.bytes, size);
  assert.equal(f.sha256, patternSha256(size, seed));
  assert.deepEqual(await s3.keys(), [`files/${f.id}`]);

  const call = client(server);
  const whole = await fetch(`${server.url}/v1/files/${f.id}/content`, { headers: { authorization: `Bearer ${server.key}` } });
  assert.equal(whole.status, 200);
  const bytes = Buffer.from(await whole.arrayBuffer());
  assert.equal(crypto.createHash("sha256").update(bytes).digest("hex"), f.sha256);
  const part = await fetch(`${server.url}/v1/files/${f.id}/download`, {
    headers: { authorization: `Bearer ${server.key}`, range: "bytes=5242870-5242889" },
  });
  assert.equal(part.status, 206);
  assert.deepEqual(Buffer.from(await part.arrayBuffer()), bytes.subarray(5242870, 5242890));

  assert.equal((await call("DELETE", `/v1/files/${f.id}`)).status, 200);
  assert.deepEqual(await s3.keys(), []);
});

test("an upload cut off halfway leaves no object in the bucket", async () => {
  await assert.rejects(
    multipartUpload({
      port: server.port,
      path: "/v1/files",
      key: server.key,
      before: { purpose: "batch" },
      file: { filename: "cut.bin", size: 24 * MiB, chunks: patternChunks(24 * MiB) },
      cutAfter: 12 * MiB,
    }),
  );
  // Give the service a moment to abort the multipart upload, then nothing is listed.
  await new Promise((r) => setTimeout(r, 500));
  assert.deepEqual(await s3.keys(), []);
  const list = await client(server)<{ data: unknown[] }>("GET", "/v1/files");
  assert.deepEqual(list.body.data, []);
});
