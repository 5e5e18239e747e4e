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
  // s3rver removes a folder once its last object is deleted, and a request that meets that half-way
  // (an upload into the same folder opening its file, a read of the deleted object) fails outside
  // its handler, which ends the test process; a real store orders them. So a DELETE here waits for
  // the requests under way and holds back new ones until it is done. stop() also waits for the
  // requests under way before it removes the directory (a node ended mid-upload leaves s3rver
  // writing after it stopped listening).
  let working = 0;
  let deleting: Promise<void> | undefined;
  const idle: Array<() => void> = [];
  server.middleware.unshift(async (ctx: { method: string }, next: () => Promise<void>) => {
    while (deleting) await deleting;
    let release: (() => void) | undefined;
    if (ctx.method === "DELETE") {
      deleting = new Promise<void>((r) => {
        release = r;
      });
      while (working > 0) await new Promise<void>((r) => idle.push(r));
    }
    working++;
    try {
      await next();
    } finally {
      working--;
      if (working === 0) for (const wake of idle.splice(0)) wake();
      if (release) {
        deleting = undefined;
        release();
      }
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
