// Settings of stored files (/v1/files): where the bytes live, how large a file and a tenant's
// store may grow, how long a file may live. Declared once; read by the files area's setup.
import path from "node:path";
import { defineSettings, readSettings, settingsOf } from "../settings/kernel.js";

export interface S3Settings {
  /** Endpoint of an S3-compatible store (unset: AWS, from the region). */
  endpoint: string | undefined;
  bucket: string;
  region: string;
  /** Key prefix every object of this service gets, so a bucket can be shared. */
  prefix: string;
  /** Key prefix of snapshot archives (kept apart from the stored files', whose sweep would take them for orphans). */
  snapshotsPrefix: string;
  /** Path-style URLs (bucket in the path): what MinIO, Ceph and most self-hosted stores expect. */
  forcePathStyle: boolean;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  /**
   * Age from which an incomplete multipart upload, or an object no record names, is taken for an
   * interrupted write's leftover and removed at start-up, ms; 0 (one node alone): all of them, as
   * nothing can be in flight when the only node starts. In a cluster another node may be writing.
   */
  leftoverAgeMs: number;
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

const setting = settingsOf("files");

export const filesSettingsSchema = defineSettings({
  backend: setting.enum("AGENTBOX_FILES_BACKEND", ["local", "s3"] as const, {
    default: "local",
    doc: "Where stored files' bytes live: `local` (disk) or `s3` (an S3-compatible object store).",
  }),
  dir: setting.string("AGENTBOX_FILES_DIR", {
    defaultDoc: "`<data dir>/files`",
    doc: "Local backend: `objects/` (the files) and `tmp/` (uploads in progress, emptied at start-up).",
  }),
  maxFileBytes: setting.number("AGENTBOX_MAX_FILE_BYTES", {
    default: 512 * 2 ** 20,
    defaultDoc: "512 MiB",
    doc: "Largest stored file (upload or export); 413 as soon as the byte past it arrives.",
  }),
  tenantQuotaMb: setting.number("AGENTBOX_TENANT_FILES_MB", {
    default: 10 * 1024,
    defaultDoc: "10240",
    doc: "Stored bytes per tenant (stored files and snapshots together), MiB, when the operator set no `storage_mb` quota for the tenant (`tenants set <id> --storage-mb N` / `PUT /v1/admin/tenants/{id}`); 429 past it.",
  }),
  maxFilesPerTenant: setting.number("AGENTBOX_MAX_FILES_PER_TENANT", {
    default: 100_000,
    defaultDoc: "100000",
    doc: "Files one tenant may hold (429 past it).",
  }),
  maxExpirySeconds: setting.number("AGENTBOX_MAX_FILE_EXPIRY_S", {
    default: 365 * 24 * 3600,
    defaultDoc: "31536000 (a year)",
    doc: "Largest `expires_after`.",
  }),
  reaperIntervalMs: setting.number("AGENTBOX_FILES_REAPER_INTERVAL_MS", {
    default: 60_000,
    defaultDoc: "60000",
    atLeast: 50,
    doc: "How often expired files' rows and bytes are deleted (an expired file is hidden from every read at once).",
  }),
  s3Bucket: setting.string("AGENTBOX_S3_BUCKET", { defaultDoc: "—", doc: "S3 backend: the bucket (required with `s3`)." }),
  s3Endpoint: setting.string("AGENTBOX_S3_ENDPOINT", {
    defaultDoc: "unset (AWS)",
    doc: "S3 backend: endpoint of a self-hosted store, e.g. `http://minio:9000`.",
  }),
  s3Region: setting.string("AGENTBOX_S3_REGION", { default: "us-east-1", doc: "S3 backend: region." }),
  s3Prefix: setting.string("AGENTBOX_S3_PREFIX", {
    default: "files/",
    allowEmpty: true,
    doc: "S3 backend: key prefix of this service's objects.",
  }),
  s3SnapshotsPrefix: setting.string("AGENTBOX_S3_SNAPSHOTS_PREFIX", {
    default: "snapshots/",
    allowEmpty: true,
    doc: "S3 backend: key prefix of snapshot archives (any node of a cluster then resumes or forks any snapshot); must differ from `AGENTBOX_S3_PREFIX`.",
  }),
  s3LeftoverAgeS: setting.number("AGENTBOX_S3_LEFTOVER_AGE_S", {
    default: 86_400,
    defaultDoc: "86400 (a day)",
    doc: "S3 backend, in a cluster: at a node's start, an incomplete multipart upload (or a stored file's object no record names) under `AGENTBOX_S3_PREFIX` is aborted (removed) only once it is this old, seconds, since another node may be writing it now: keep it well above `AGENTBOX_REQUEST_TIMEOUT_MS` (an upload's longest life). One node alone removes them all at its start.",
  }),
  s3ForcePathStyle: setting.boolean("AGENTBOX_S3_FORCE_PATH_STYLE", {
    default: true,
    doc: "S3 backend: bucket in the path (MinIO, Ceph); `false` for virtual-hosted style.",
  }),
  s3AccessKeyId: setting.string("AGENTBOX_S3_ACCESS_KEY_ID", {
    defaultDoc: "unset",
    doc: "S3 backend: credentials; unset, the AWS SDK's default chain (environment, instance role).",
  }),
  s3SecretAccessKey: setting.string("AGENTBOX_S3_SECRET_ACCESS_KEY", {
    defaultDoc: "unset",
    doc: "S3 backend: credentials; unset, the AWS SDK's default chain (environment, instance role).",
  }),
});

/**
 * Reads the files settings; `dataDir` is where the local backend lives unless AGENTBOX_FILES_DIR
 * says; `clustered`: other nodes share the store (AGENTBOX_S3_LEFTOVER_AGE_S applies).
 */
export function loadFilesConfig(dataDir: string, env: NodeJS.ProcessEnv = process.env, clustered = false): FilesConfig {
  const s = readSettings(filesSettingsSchema, env);
  if (s.backend === "s3" && !s.s3Bucket) throw new Error("AGENTBOX_FILES_BACKEND=s3 needs AGENTBOX_S3_BUCKET");
  // The stored files' start-up sweep lists their prefix one level deep: snapshot archives must not be in that level.
  if (s.backend === "s3" && s.s3SnapshotsPrefix.startsWith(s.s3Prefix) && !s.s3SnapshotsPrefix.slice(s.s3Prefix.length).includes("/")) {
    throw new Error("AGENTBOX_S3_SNAPSHOTS_PREFIX must not put snapshot archives among the stored files of AGENTBOX_S3_PREFIX");
  }
  return {
    backend: s.backend,
    dir: path.resolve(s.dir ?? path.join(dataDir, "files")),
    s3: {
      endpoint: s.s3Endpoint,
      bucket: s.s3Bucket ?? "",
      region: s.s3Region,
      prefix: s.s3Prefix,
      snapshotsPrefix: s.s3SnapshotsPrefix,
      forcePathStyle: s.s3ForcePathStyle,
      accessKeyId: s.s3AccessKeyId,
      secretAccessKey: s.s3SecretAccessKey,
      leftoverAgeMs: clustered ? s.s3LeftoverAgeS * 1000 : 0,
    },
    maxFileBytes: s.maxFileBytes,
    tenantQuotaMb: s.tenantQuotaMb,
    maxExpirySeconds: s.maxExpirySeconds,
    reaperIntervalMs: s.reaperIntervalMs,
    maxFilesPerTenant: s.maxFilesPerTenant,
  };
}
