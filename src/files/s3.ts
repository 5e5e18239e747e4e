// The S3-compatible storage backend (AWS S3, MinIO, Ceph RGW, ...): the scale-out choice when
// several service instances share one store. Writes are multipart uploads streamed in parts of
// PART_SIZE, so memory per upload stays bounded whatever the file's size; an object exists only
// once its upload is completed, and an interrupted upload is aborted (its parts are dropped). In a
// cluster the nodes share the bucket: a node's start-up clean-up takes only what is old enough
// (S3Settings.leftoverAgeMs) for an interrupted write's leftover, never another node's write in flight.
import { PassThrough, Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { ApiError } from "../errors.js";
import type { S3Settings } from "./settings.js";
import type { ByteRange, FileStorage } from "./storage.js";

/** Longest wait to connect to the store, and longest silence of a connection while a request is under way. */
const CONNECT_TIMEOUT_MS = 10_000;
const SILENCE_TIMEOUT_MS = 60_000;
/** Longest a request (a part of up to 5 MiB included) may take until the answer's head. */
const HEAD_TIMEOUT_MS = 120_000;

/**
 * What the store's failure means to the request: a missing object stays NoSuchKey (a 404 to the
 * caller), anything else (a 5xx, a malformed or cut answer, a silence) is the store failing, a
 * 502 for this request, never a 500 that reads as the service's own bug.
 */
function storeError(err: unknown): unknown {
  const name = (err as { name?: unknown } | null)?.name;
  if (err instanceof ApiError || name === "NoSuchKey" || name === "AbortError") return err;
  const status = (err as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  const what = typeof name === "string" ? name.slice(0, 100) : "an unknown error";
  return new ApiError("upstream_error", `The object store failed (${what}${typeof status === "number" ? `, HTTP ${status}` : ""})`);
}

/** S3's smallest part; with QUEUE parts in flight an upload holds ~10 MiB of the service's memory. */
const PART_SIZE = 5 * 2 ** 20;
const QUEUE = 2;

export class S3Storage implements FileStorage {
  private readonly client: S3Client;

  constructor(private readonly s3: S3Settings) {
    this.client = new S3Client({
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: s3.forcePathStyle,
      credentials: s3.accessKeyId && s3.secretAccessKey ? { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } : undefined,
      // Without these a store that stops answering holds the request (and its upload's memory) forever.
      // (requestTimeout: until the answer's head, which a 101 answer would never give.)
      requestHandler: {
        connectionTimeout: CONNECT_TIMEOUT_MS,
        socketTimeout: SILENCE_TIMEOUT_MS,
        requestTimeout: HEAD_TIMEOUT_MS,
        throwOnRequestTimeout: true,
      },
    });
    // The SDK takes any status below 300 for a success: a store answering "000" or "099" to an
    // upload would leave a file record whose bytes were never stored. Inside the deserializer, so
    // it sees the raw answer.
    this.client.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const status = (out.response as { statusCode?: unknown } | undefined)?.statusCode;
        if (typeof status !== "number" || status < 200 || status > 599)
          throw new ApiError("upstream_error", `The object store answered with status ${String(status)}`);
        return out;
      },
      { step: "deserialize", priority: "low", name: "agentboxStatusCheck" },
    );
  }

  private key(key: string): string {
    return `${this.s3.prefix}${key}`;
  }

  /**
   * Whether an upload begun, or an object last written, at `at` (by `before`, the clean-up's
   * start less leftoverAgeMs) can only be an interrupted write's leftover. A store that gives no
   * time: only for one node alone.
   */
  private isLeftover(at: Date | undefined, before: number): boolean {
    return this.s3.leftoverAgeMs === 0 || (at !== undefined && at.getTime() <= before);
  }

  /**
   * Aborts multipart uploads an interrupted earlier run left open under the prefix (in a cluster,
   * those begun longer than leftoverAgeMs ago). A store that cannot list them (NotImplemented)
   * relies on its own clean-up (an AbortIncompleteMultipartUpload lifecycle rule on the bucket).
   */
  async init(): Promise<void> {
    try {
      await this.abortLeftovers();
    } catch (err) {
      if ((err as { name?: string }).name !== "NotImplemented") throw err;
    }
  }

  private async abortLeftovers(): Promise<void> {
    const before = Date.now() - this.s3.leftoverAgeMs;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const page = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.s3.bucket,
          Prefix: this.s3.prefix,
          KeyMarker: keyMarker,
          UploadIdMarker: uploadIdMarker,
        }),
      );
      for (const u of page.Uploads ?? []) {
        if (!this.isLeftover(u.Initiated, before)) continue;
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.s3.bucket, Key: u.Key, UploadId: u.UploadId }));
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
    } while (keyMarker);
  }

  async put(key: string, source: Readable): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.s3.bucket, Key: this.key(key), Body: source },
      partSize: PART_SIZE,
      queueSize: QUEUE,
      leavePartsOnError: false,
    });
    // lib-storage reads the body by iterating it: an error of the source must also abort the upload.
    let failure: Error | undefined;
    const onError = (err: Error) => {
      failure = err;
      void upload.abort().catch(() => {});
    };
    source.once("error", onError);
    try {
      await upload.done();
      if (failure) throw failure;
    } catch (err) {
      // A failed single-part (small) upload never created anything; a completed one whose source
      // failed afterwards is removed.
      await this.remove(key).catch(() => {});
      throw failure ?? storeError(err);
    } finally {
      source.off("error", onError);
    }
  }

  async open(key: string, range?: ByteRange): Promise<Readable> {
    const res = await this.client
      .send(
        new GetObjectCommand({
          Bucket: this.s3.bucket,
          Key: this.key(key),
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      )
      .catch((err: unknown) => {
        throw storeError(err);
      });
    const body = res.Body;
    if (!(body instanceof Readable)) throw new ApiError("upstream_error", "The object store answered without the object's bytes");
    // A body the store cuts or garbles fails as the store's failure (a 502 while nothing is sent yet).
    const out = new PassThrough();
    body.once("error", (err) => out.destroy(storeError(err) as Error));
    out.once("close", () => body.destroy());
    body.pipe(out);
    return out;
  }

  async remove(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.s3.bucket, Key: this.key(key) })).catch((err: unknown) => {
      throw storeError(err);
    });
  }

  /**
   * The objects directly under the prefix: not those of a deeper prefix (snapshot archives under
   * `snapshots/`, say). In a cluster only those last written more than leftoverAgeMs ago: a
   * younger one may be another node's, stored a moment before its record is.
   */
  async *keys(): AsyncIterable<string> {
    const before = Date.now() - this.s3.leftoverAgeMs;
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.s3.bucket, Prefix: this.s3.prefix, Delimiter: "/", ContinuationToken: token }),
      );
      for (const o of page.Contents ?? []) {
        if (o.Key && this.isLeftover(o.LastModified, before)) yield o.Key.slice(this.s3.prefix.length);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}
