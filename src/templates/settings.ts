// Settings of the templates area read from the environment (documented in docs/operations.md).
import crypto from "node:crypto";
import path from "node:path";

export interface TemplateSettings {
  /** Where built root filesystems live; traversable by the sandboxes' host uids (not the private data dir). */
  dir: string;
  /** Registries images may be pulled from (host or host:port); docker.io for names without one. */
  registries: string[];
  /** Registries reached over plain HTTP or with unverified TLS (a local registry). */
  insecureRegistries: string[];
  /** Compressed size of an image's layers, MiB (checked from its manifest before the pull). */
  maxImageMb: number;
  /** Size of an unpacked root filesystem, MiB. */
  maxRootfsMb: number;
  /** Seconds one build may take in all. */
  buildTimeoutS: number;
  /** Builds running at once; more wait in the queue. */
  parallelBuilds: number;
  /** Builds waiting; past it a build request is refused (503). */
  buildQueue: number;
  /** Templates (with their builds) one tenant may have. */
  maxPerTenant: number;
  /** The host uid skopeo and umoci run as (never root: they read untrusted images). */
  buildUid: number;
}

function int(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new Error(`${name} must be an integer from ${min} to ${max}, got '${raw}'`);
  return value;
}

function list(name: string, fallback: string[]): string[] {
  const raw = process.env[name];
  if (raw === undefined) return fallback;
  return raw
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== "");
}

export function templateSettings(dataDir: string): TemplateSettings {
  return {
    dir: path.resolve(
      process.env.AGENTBOX_TEMPLATE_DIR ||
        path.join("/var/lib/agentbox-templates", crypto.createHash("sha256").update(dataDir).digest("hex").slice(0, 16)),
    ),
    registries: list("AGENTBOX_TEMPLATE_REGISTRIES", ["docker.io", "ghcr.io", "quay.io"]),
    insecureRegistries: list("AGENTBOX_TEMPLATE_INSECURE_REGISTRIES", []),
    maxImageMb: int("AGENTBOX_TEMPLATE_MAX_IMAGE_MB", 2048, 1, 1 << 20),
    maxRootfsMb: int("AGENTBOX_TEMPLATE_MAX_ROOTFS_MB", 8192, 1, 1 << 22),
    buildTimeoutS: int("AGENTBOX_TEMPLATE_BUILD_TIMEOUT_S", 900, 10, 86400),
    parallelBuilds: int("AGENTBOX_TEMPLATE_PARALLEL_BUILDS", 1, 1, 64),
    buildQueue: int("AGENTBOX_TEMPLATE_BUILD_QUEUE", 16, 0, 10000),
    maxPerTenant: int("AGENTBOX_TEMPLATE_MAX_PER_TENANT", 20, 1, 100000),
    buildUid: int("AGENTBOX_TEMPLATE_BUILD_UID", 65534, 1, 2 ** 31 - 1),
  };
}
