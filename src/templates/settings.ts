// Settings of the templates area (where root filesystems live, which registries, build limits),
// declared once and read by openTemplates() (src/templates/setup.ts).
import crypto from "node:crypto";
import path from "node:path";
import { defineSettings, readSettings, type Settings, settingsOf } from "../settings/kernel.js";

const setting = settingsOf("templates");

export const templateSettingsSchema = defineSettings({
  dir: setting.string("AGENTBOX_TEMPLATE_DIR", {
    defaultDoc: "`/var/lib/agentbox-templates/<hash of the data dir>`",
    doc: "Where built root filesystems live, one directory per digest. Must be traversable (`o+x`) by the sandboxes' host uids all the way up, which is why it is not under the private data dir; the service refuses to start otherwise.",
  }),
  registries: setting.list("AGENTBOX_TEMPLATE_REGISTRIES", {
    default: ["docker.io", "ghcr.io", "quay.io"],
    defaultDoc: "`docker.io,ghcr.io,quay.io`",
    doc: "Registries (`host` or `host:port`) images may be pulled from, comma-separated; an image elsewhere is 400 `invalid_request`. A loopback or private registry must be listed explicitly.",
  }),
  insecureRegistries: setting.list("AGENTBOX_TEMPLATE_INSECURE_REGISTRIES", {
    defaultDoc: "none",
    doc: "Registries reached over plain HTTP or without TLS verification (a local registry).",
  }),
  maxImageMb: setting.integer("AGENTBOX_TEMPLATE_MAX_IMAGE_MB", {
    default: 2048,
    minimum: 1,
    maximum: 1 << 20,
    doc: "Compressed size of an image's layers, read from its manifest before anything is downloaded; over it the build fails with the sizes.",
  }),
  maxRootfsMb: setting.integer("AGENTBOX_TEMPLATE_MAX_ROOTFS_MB", {
    default: 8192,
    minimum: 1,
    maximum: 1 << 22,
    doc: "Disk an unpacked root filesystem may take (counted in blocks); no single file may grow past it while unpacking (`prlimit --fsize`). Over it the build fails.",
  }),
  buildTimeoutS: setting.integer("AGENTBOX_TEMPLATE_BUILD_TIMEOUT_S", {
    default: 900,
    minimum: 10,
    maximum: 86400,
    doc: "One build's deadline: past it its tools are killed, its step ended, and it fails with that reason.",
  }),
  fetchTimeoutS: setting.integer("AGENTBOX_TEMPLATE_FETCH_TIMEOUT_S", {
    default: 600,
    minimum: 5,
    maximum: 86400,
    doc: "In a cluster: how long a node may take to fetch a template's files (its root filesystem, its saved `/home/user`) from a node that holds them, at the first sandbox of it there; past it the create is 503 `node_unavailable` and nothing fetched is kept.",
  }),
  parallelBuilds: setting.integer("AGENTBOX_TEMPLATE_PARALLEL_BUILDS", {
    default: 1,
    minimum: 1,
    maximum: 64,
    doc: "Builds running at once; the others wait, and start in turn across tenants.",
  }),
  buildQueue: setting.integer("AGENTBOX_TEMPLATE_BUILD_QUEUE", {
    default: 16,
    maximum: 10000,
    doc: "Builds that may wait, over all tenants (each is also held to `AGENTBOX_TEMPLATE_BUILDS_PER_TENANT`); past it a build request is 503 `at_capacity` with `Retry-After`.",
  }),
  buildsPerTenant: setting.integer("AGENTBOX_TEMPLATE_BUILDS_PER_TENANT", {
    default: 4,
    minimum: 1,
    maximum: 10000,
    doc: "Builds one tenant may have waiting or running at once on a node; past it a build request is 429 `quota_exceeded` with `Retry-After`. The next build to start is picked across tenants in turn (the tenant with the fewest running, then the one served longest ago), not in arrival order.",
  }),
  logKb: setting.integer("AGENTBOX_TEMPLATE_LOG_KB", {
    default: 512,
    minimum: 16,
    maximum: 65536,
    doc: "What one build's log keeps, in KiB: its latest lines; the log says how many earlier lines (and bytes) it dropped. Kept in memory while the build runs and for `AGENTBOX_TEMPLATE_LOG_GRACE_S` after, and on the node's disk (as much) until its template is deleted.",
  }),
  logGraceS: setting.integer("AGENTBOX_TEMPLATE_LOG_GRACE_S", {
    default: 300,
    minimum: 0,
    maximum: 86400,
    doc: "How long an ended build's log stays in memory for late readers; after it (or at once when its template is deleted) it is read from the node's disk.",
  }),
  maxFiles: setting.integer("AGENTBOX_TEMPLATE_MAX_FILES", {
    default: 100000,
    minimum: 100,
    maximum: 100000000,
    doc: "Files, directories and links a template's root filesystem may hold (host inodes): an image's unpacked layers, the result of its build steps (their writable copy holds no more), or a copy fetched from another node. Over it the build fails naming this limit. A Debian image with Python holds some 20,000 to 30,000.",
  }),
  buildMemoryHeadroomMb: setting.integer("AGENTBOX_TEMPLATE_BUILD_MEMORY_HEADROOM_MB", {
    default: 512,
    minimum: 64,
    maximum: 1 << 20,
    doc: "A build's host-side work (pulling and unpacking with skopeo and umoci, copying its base onto its in-memory layer, writing the result back) runs in a memory cgroup of its own, not the service's: its limit is the layer's size (base plus `disk_mb`) plus this much for the tools.",
  }),
  maxPerTenant: setting.integer("AGENTBOX_TEMPLATE_MAX_PER_TENANT", {
    default: 20,
    minimum: 1,
    maximum: 100000,
    doc: "Templates one tenant may have (any state); past it 429 `quota_exceeded`.",
  }),
  maxContextMb: setting.integer("AGENTBOX_TEMPLATE_MAX_CONTEXT_MB", {
    default: 4,
    minimum: 1,
    maximum: 1024,
    doc: "Size of a Dockerfile build's `context` (the files COPY and ADD take), decoded; over it the request is 400 `invalid_request`. Requests are also held to `AGENTBOX_BODY_LIMIT_BYTES`.",
  }),
  buildUid: setting.integer("AGENTBOX_TEMPLATE_BUILD_UID", {
    default: 65534,
    minimum: 1,
    maximum: 2 ** 31 - 1,
    defaultDoc: "`65534` (nobody)",
    doc: "Host uid and gid skopeo and umoci run as: they read untrusted images and never run as root.",
  }),
});

export type TemplateSettings = Omit<Settings<typeof templateSettingsSchema>, "dir"> & { dir: string };

export function templateSettings(dataDir: string, env: NodeJS.ProcessEnv = process.env): TemplateSettings {
  const s = readSettings(templateSettingsSchema, env);
  return {
    ...s,
    dir: path.resolve(
      s.dir || path.join("/var/lib/agentbox-templates", crypto.createHash("sha256").update(dataDir).digest("hex").slice(0, 16)),
    ),
  };
}
