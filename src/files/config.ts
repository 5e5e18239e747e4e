// Settings of stored files (/v1/files): where the bytes live, how large a file and a tenant's
// store may grow, how long a file may live. Read once at start-up by src/config.ts.
import path from "node:path";

export interface S3Settings {
  /** Endpoint of an S3-compatible store (unset: AWS, from the region). */
  endpoint: string | undefined;
  bucket: string;
  region: string;
  /** Key prefix every object of this service gets, so a bucket can be shared. */
  prefix: string;
  /** Path-style URLs (bucket in the path): what MinIO, Ceph and most self-hosted stores expect. */
  forcePathStyle: boolean;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
}

export interface FilesConfig {
  /** Storage backend of the bytes: local disk (default) or an S3-compatible object store. */
  backend: "local" | "s3";
  /** Root of the local backend (objects/ and tmp/ under it). */
  dir: string;
  s3: S3Settings;
  /** Largest file one upload or export may store. */
  maxFileBytes: number;
  /** Stored bytes per tenant when the operator set no storage_mb quota for it, MiB. */
  tenantQuotaMb: number;
  /** Longest `expires_after` accepted, seconds. */
  maxExpirySeconds: number;
  /** How often expired files are deleted, ms. */
  reaperIntervalMs: number;
  /** Files one tenant may hold (a bound on the rows its uploads can make). */
  maxFilesPerTenant: number;
}

type Num = (name: string, fallback: number) => number;

export function loadFilesConfig(num: Num, dataDir: string): FilesConfig {
  const env = process.env;
  const backend = env.AGENTBOX_FILES_BACKEND || "local";
  if (backend !== "local" && backend !== "s3") throw new Error(`AGENTBOX_FILES_BACKEND must be 'local' or 's3', got '${backend}'`);
  if (backend === "s3" && !env.AGENTBOX_S3_BUCKET) throw new Error("AGENTBOX_FILES_BACKEND=s3 needs AGENTBOX_S3_BUCKET");
  return {
    backend,
    dir: path.resolve(env.AGENTBOX_FILES_DIR || path.join(dataDir, "files")),
    s3: {
      endpoint: env.AGENTBOX_S3_ENDPOINT || undefined,
      bucket: env.AGENTBOX_S3_BUCKET ?? "",
      region: env.AGENTBOX_S3_REGION || "us-east-1",
      prefix: env.AGENTBOX_S3_PREFIX ?? "files/",
      forcePathStyle: (env.AGENTBOX_S3_FORCE_PATH_STYLE ?? "true").toLowerCase() !== "false",
      accessKeyId: env.AGENTBOX_S3_ACCESS_KEY_ID || undefined,
      secretAccessKey: env.AGENTBOX_S3_SECRET_ACCESS_KEY || undefined,
    },
    maxFileBytes: num("AGENTBOX_MAX_FILE_BYTES", 512 * 2 ** 20),
    tenantQuotaMb: num("AGENTBOX_TENANT_FILES_MB", 10 * 1024),
    maxExpirySeconds: num("AGENTBOX_MAX_FILE_EXPIRY_S", 365 * 24 * 3600),
    reaperIntervalMs: Math.max(50, num("AGENTBOX_FILES_REAPER_INTERVAL_MS", 60_000)),
    maxFilesPerTenant: num("AGENTBOX_MAX_FILES_PER_TENANT", 100_000),
  };
}
