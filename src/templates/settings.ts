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
    doc: "Builds running at once; the others wait in order.",
  }),
  buildQueue: setting.integer("AGENTBOX_TEMPLATE_BUILD_QUEUE", {
    default: 16,
    maximum: 10000,
    doc: "Builds that may wait; past it a build request is 503 `at_capacity` with `Retry-After`.",
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
