// What s3rver (the tests' S3 server) lacks and a real store has: listing the multipart uploads in
// progress (ListMultipartUploads) and aborting one (AbortMultipartUpload), answered from s3rver's
// own files (`<bucket>/._S3rver_uploads/<upload id>/key`), so the service's start-up clean-up of
// interrupted uploads runs against it as it would against AWS S3 or MinIO. Also makes an upload or
// an object look old (its start or last change moved into the past) for tests of that clean-up.
import fs from "node:fs";
import path from "node:path";

/** A Koa-style middleware: s3rver is a Koa application and runs these before its own routes. */
type Middleware = (
  ctx: { method: string; path: string; query: Record<string, string | string[] | undefined>; status: number; body: unknown; type: string },
  next: () => Promise<void>,
) => Promise<void>;

export interface S3Uploads {
  middleware: Middleware;
  /** The uploads in progress in the bucket: key and upload id, sorted by key. */
  list(): Array<{ key: string; uploadId: string }>;
  /** Moves the start of an upload `ms` into the past. */
  age(uploadId: string, ms: number): void;
  /** Moves the last change of an object `ms` into the past. */
  ageObject(key: string, ms: number): void;
}

const xml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function s3Uploads(dir: string, bucket: string): S3Uploads {
  const uploadsDir = path.join(dir, bucket, "._S3rver_uploads");
  const all = () =>
    (fs.existsSync(uploadsDir) ? fs.readdirSync(uploadsDir) : [])
      .filter((id) => fs.existsSync(path.join(uploadsDir, id, "key")))
      .map((uploadId) => {
        const file = path.join(uploadsDir, uploadId, "key");
        return { key: fs.readFileSync(file, "utf8"), uploadId, initiated: fs.statSync(file).mtime };
      })
      .sort((a, b) => a.key.localeCompare(b.key));
  const backdate = (file: string, ms: number) => {
    const at = new Date(Date.now() - ms);
    fs.utimesSync(file, at, at);
  };
  return {
    async middleware(ctx, next) {
      // Path-style: /<bucket>/ (the SDK's trailing slash) or /<bucket>/<key>.
      const [first, ...rest] = ctx.path.split("/").filter(Boolean);
      if (first !== bucket) return next();
      if (ctx.method === "GET" && rest.length === 0 && ctx.query.uploads !== undefined) {
        const prefix = typeof ctx.query.prefix === "string" ? ctx.query.prefix : "";
        const uploads = all()
          .filter((u) => u.key.startsWith(prefix))
          .map(
            (u) =>
              `<Upload><Key>${xml(u.key)}</Key><UploadId>${u.uploadId}</UploadId><Initiated>${u.initiated.toISOString()}</Initiated></Upload>`,
          );
        ctx.type = "application/xml";
        ctx.body = `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${bucket}</Bucket><Prefix>${xml(prefix)}</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>${uploads.join("")}</ListMultipartUploadsResult>`;
        return;
      }
      if (ctx.method === "DELETE" && rest.length > 0 && typeof ctx.query.uploadId === "string") {
        const upload = path.join(uploadsDir, path.basename(ctx.query.uploadId));
        if (!fs.existsSync(upload)) {
          ctx.status = 404;
          ctx.type = "application/xml";
          ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`;
          return;
        }
        fs.rmSync(upload, { recursive: true, force: true });
        ctx.status = 204;
        return;
      }
      return next();
    },
    list: () => all().map(({ key, uploadId }) => ({ key, uploadId })),
    age: (uploadId, ms) => backdate(path.join(uploadsDir, uploadId, "key"), ms),
    ageObject: (key, ms) => backdate(path.join(dir, bucket, `${key}._S3rver_object`), ms),
  };
}
