// A real S3-compatible server on loopback for tests (s3rver, files in a temporary directory): its
// client, the service settings that point the files backend at it, its multipart uploads in
// progress (./s3-uploads.ts), and its stop.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { type S3Uploads, s3Uploads } from "./s3-uploads.js";
import { freePort } from "./server.js";

export interface TestS3 {
  client: S3Client;
  /** AGENTBOX_FILES_BACKEND=s3 and the AGENTBOX_S3_* settings of this server and bucket. */
  env: Record<string, string>;
  /** The bucket's object keys, sorted. */
  keys(): Promise<string[]>;
  /** The multipart uploads in progress (listed and aborted as by a real store, which s3rver alone does not). */
  uploads: S3Uploads;
  stop(): Promise<void>;
}

export async function startS3(bucket: string): Promise<TestS3> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-s3-"));
  const port = await freePort();
  const server = new S3rver({
    address: "127.0.0.1",
    port,
    silent: true,
    directory: dir,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const uploads = s3Uploads(dir, bucket);
  // Before s3rver's own routes, which answer these requests NotImplemented.
  server.middleware.unshift(uploads.middleware);
  // Requests s3rver is still working on: a node ended in the middle of an upload leaves its file
  // writes running after the server stopped listening, and stop() waits for them before it removes
  // the directory (else they fail on a missing directory after the test file ended).
  let working = 0;
  server.middleware.unshift(async (_ctx: unknown, next: () => Promise<void>) => {
    working++;
    try {
      await next();
    } finally {
      working--;
    }
  });
  await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  // s3rver accepts any credentials with its default key pair.
  const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
  const client = new S3Client({ region: "us-east-1", endpoint, forcePathStyle: true, credentials });
  return {
    client,
    env: {
      AGENTBOX_FILES_BACKEND: "s3",
      AGENTBOX_S3_ENDPOINT: endpoint,
      AGENTBOX_S3_BUCKET: bucket,
      AGENTBOX_S3_ACCESS_KEY_ID: credentials.accessKeyId,
      AGENTBOX_S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    },
    uploads,
    async keys() {
      const res = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
      return (res.Contents ?? []).map((o) => o.Key ?? "").sort();
    },
    async stop() {
      client.destroy();
      await server.close();
      for (let i = 0; i < 200 && working > 0; i++) await new Promise((r) => setTimeout(r, 50));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
