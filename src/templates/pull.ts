// Pulling an OCI/Docker image into a template's root filesystem with real tools: skopeo reads the
// manifest (its layers' sizes are checked before anything is downloaded) and copies the image into
// an OCI layout, verifying every blob's digest; umoci unpacks the layers in order (whiteouts
// honoured, nothing written outside the bundle) as an unprivileged user. Both run as the build uid,
// never as root, with a clean environment and the build's deadline.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ApiError } from "../errors.js";
import type { BuildCgroup } from "./build-cgroup.js";
import { dockerTransport, type ImageRef } from "./reference.js";
import { tooManyFiles } from "./rootfs.js";

export interface RegistryAuth {
  username: string;
  password: string;
}

export interface PullOptions {
  ref: ImageRef;
  auth?: RegistryAuth;
  insecure: boolean;
  /** The build's scratch directory (owned by `uid`). */
  work: string;
  uid: number;
  maxImageBytes: number;
  /** No file of the unpacked tree may be larger (RLIMIT_FSIZE on umoci: a 50 GB sparse file stops at it). */
  maxFileBytes: number;
  /** The build's memory group, where the tools run (absent: the service's). */
  cgroup?: BuildCgroup;
  /** Entries the layers may hold together, counted before anything is unpacked (AGENTBOX_TEMPLATE_MAX_FILES). */
  maxFiles: number;
  signal: AbortSignal;
  log: (line: string) => void;
  progress: (percent: number) => void;
}

export interface Pulled {
  /** The unpacked root filesystem (in the scratch directory). */
  tree: string;
  /** sha256 hex of the image manifest: the root filesystem's content address. */
  digest: string;
}

const ARCH = process.arch === "arm64" ? "arm64" : "amd64";
/** Most output kept from a tool run for its answer (a manifest: registries keep them to 4 MiB). */
const MAX_CAPTURE_BYTES = 8 * 2 ** 20;
/** Layers an image may have (Docker's own limit is 127). */
const MAX_LAYERS = 1000;
const DIGEST = /^sha256:[a-f0-9]{64}$/;

/** A build tool failed: its own words, cut to a readable size. */
export class ToolError extends Error {}

/** Runs a tool as the build uid; its output goes to the build's log line by line. */
export function runTool(
  file: string,
  args: string[],
  opts: { uid: number; cwd: string; signal: AbortSignal; log: (line: string) => void; capture?: boolean; cgroup?: BuildCgroup },
): Promise<string> {
  // In the build's memory group: joined as root, then dropped to the build uid (BuildCgroup.wrap).
  const [cmd, argv] = opts.cgroup ? opts.cgroup.wrap(file, args, opts.uid) : [file, args];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, {
      ...(opts.cgroup ? {} : { uid: opts.uid, gid: opts.uid }),
      cwd: opts.cwd,
      env: { PATH: "/usr/bin:/bin", HOME: opts.cwd, XDG_RUNTIME_DIR: opts.cwd, LANG: "C.UTF-8" },
      stdio: ["ignore", "pipe", "pipe"],
      signal: opts.signal,
      killSignal: "SIGKILL",
    });
    const out: Buffer[] = [];
    let captured = 0;
    let tail = "";
    const onLine = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-2000);
      for (const line of text.split("\n")) if (line.trim() !== "") opts.log(line.trimEnd());
    };
    child.stdout.on("data", (c: Buffer) => {
      if (!opts.capture) return onLine(c);
      // What a tool prints for capture is what a registry sent (a manifest): bounded.
      captured += c.length;
      if (captured <= MAX_CAPTURE_BYTES) out.push(c);
      else if (!child.killed) child.kill("SIGKILL");
    });
    child.stderr.on("data", onLine);
    child.on("error", (err) => reject(opts.signal.aborted ? opts.signal.reason : new ToolError(`${path.basename(file)}: ${err.message}`)));
    child.on("close", (code) => {
      if (opts.signal.aborted) return reject(opts.signal.reason);
      if (captured > MAX_CAPTURE_BYTES) return reject(new ToolError(`${path.basename(file)} printed more than ${MAX_CAPTURE_BYTES} bytes`));
      if (code === 0) return resolve(Buffer.concat(out).toString());
      const last = tail.trim().split("\n").slice(-3).join(" ").slice(0, 500);
      reject(new ToolError(`${path.basename(file)} failed (exit ${code}): ${last}`));
    });
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A manifest as a registry sent it: untrusted, so parsed and checked here (a bad one fails the build, never a size check). */
export function parseManifest(
  text: string,
): { platforms: { digest: string; os: unknown; architecture: unknown }[] } | { layerBytes: number } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new ToolError("the registry's manifest is not JSON");
  }
  if (!isObject(doc)) throw new ToolError("the registry's manifest is not a JSON object");
  if (doc.manifests !== undefined) {
    if (!Array.isArray(doc.manifests) || doc.manifests.length > MAX_LAYERS)
      throw new ToolError("the registry's image index has no list of manifests");
    const platforms = doc.manifests.filter(isObject).map((m) => {
      const platform = isObject(m.platform) ? m.platform : {};
      return { digest: m.digest, os: platform.os, architecture: platform.architecture };
    });
    return {
      platforms: platforms.filter(
        (p): p is { digest: string; os: unknown; architecture: unknown } => typeof p.digest === "string" && DIGEST.test(p.digest),
      ),
    };
  }
  const layers = doc.layers ?? [];
  if (!Array.isArray(layers) || layers.length > MAX_LAYERS)
    throw new ToolError(`the registry's manifest has no list of at most ${MAX_LAYERS} layers`);
  let bytes = 0;
  for (const l of layers) {
    // A size that is not a count (negative, a string, missing) would slip past the image size limit.
    const size = isObject(l) ? l.size : undefined;
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0)
      throw new ToolError("the registry's manifest gives a layer without a valid size");
    bytes += size;
  }
  return { layerBytes: bytes };
}

/** The compressed size of the image's layers for this machine's platform, from its manifest. */
async function layerBytes(o: PullOptions, transportArgs: string[]): Promise<number> {
  const inspect = (ref: string) =>
    runTool("/usr/bin/skopeo", ["inspect", "--raw", ...transportArgs, ref], { ...o, cwd: o.work, capture: true }).then(parseManifest);
  let manifest = await inspect(dockerTransport(o.ref));
  if ("platforms" in manifest) {
    const mine = manifest.platforms.find((m) => m.os === "linux" && m.architecture === ARCH);
    if (!mine) throw new ApiError("invalid_request", `The image has no linux/${ARCH} variant`);
    manifest = await inspect(dockerTransport({ ...o.ref, reference: `@${mine.digest}` }));
    if ("platforms" in manifest) throw new ToolError("the registry answered an image index for a platform's manifest");
  }
  return manifest.layerBytes;
}

/** How a layer's tar is read, by its media type: gzip, zstd or plain. */
function decompressorOf(mediaType: string): string | undefined {
  if (/tar\+gzip$|tar\.gzip$/.test(mediaType)) return "/usr/bin/gzip";
  if (/tar\+zstd$/.test(mediaType)) return "/usr/bin/zstd";
  if (/tar$/.test(mediaType)) return "";
  return undefined;
}

/**
 * Counts the entries of the image's layers (tar -t, as the build uid) before umoci unpacks them: a
 * small layer of many empty files would otherwise take that many host inodes before the unpacked
 * tree is counted. Entries of every layer count (a whiteout or a file replaced later too), so the
 * count is an upper bound of the tree's.
 */
async function checkEntries(o: PullOptions, layout: string, manifestHex: string): Promise<void> {
  const blob = (hex: string) => path.join(layout, "blobs", "sha256", hex);
  const manifest = JSON.parse(await fs.promises.readFile(blob(manifestHex), "utf8")) as {
    layers?: { digest?: string; mediaType?: string }[];
  };
  let total = 0;
  for (const layer of manifest.layers ?? []) {
    const hex = /^sha256:([a-f0-9]{64})$/.exec(layer.digest ?? "")?.[1];
    const tool = decompressorOf(layer.mediaType ?? "");
    if (!hex || tool === undefined)
      throw new ToolError(`the image has a layer of an unknown kind (${String(layer.mediaType).slice(0, 100)})`);
    // The count is all that comes back (a few bytes), whatever the names; a broken layer reads as
    // what it held up to the break (umoci refuses it after).
    const count = await runTool(
      "/bin/sh",
      [
        "-c",
        tool ? '"$1" -dc -- "$2" | /usr/bin/tar -tf - 2>/dev/null | /usr/bin/wc -l' : '/usr/bin/tar -tf "$2" 2>/dev/null | /usr/bin/wc -l',
        "sh",
        tool,
        blob(hex),
      ],
      { ...o, cwd: o.work, capture: true },
    );
    total += Number(count.trim()) || 0;
    if (total > o.maxFiles) throw tooManyFiles(o.maxFiles, "The image's layers hold");
  }
  o.log(`the layers hold ${total} entries (the limit: ${o.maxFiles})`);
}

export async function pullImage(o: PullOptions): Promise<Pulled> {
  const args: string[] = [];
  if (o.auth) {
    const authfile = path.join(o.work, "auth.json");
    const auth = Buffer.from(`${o.auth.username}:${o.auth.password}`).toString("base64");
    await fs.promises.writeFile(authfile, JSON.stringify({ auths: { [o.ref.registry]: { auth } } }), { mode: 0o600 });
    await fs.promises.chown(authfile, o.uid, o.uid).catch(() => {});
    args.push("--authfile", authfile);
  }
  if (o.insecure) args.push("--tls-verify=false");
  o.log(`inspecting ${o.ref.registry}/${o.ref.repository}${o.ref.reference}`);
  const bytes = await layerBytes(o, args);
  if (bytes > o.maxImageBytes) {
    throw new ApiError(
      "invalid_request",
      `The image's layers are ${Math.ceil(bytes / 2 ** 20)} MiB compressed, over the limit of ${Math.round(o.maxImageBytes / 2 ** 20)} MiB (AGENTBOX_TEMPLATE_MAX_IMAGE_MB)`,
    );
  }
  o.progress(15);
  const copyArgs = args.map((a) => (a === "--authfile" ? "--src-authfile" : a === "--tls-verify=false" ? "--src-tls-verify=false" : a));
  const layout = path.join(o.work, "layout");
  o.log(`pulling ${Math.ceil(bytes / 2 ** 20)} MiB of layers`);
  await runTool(
    "/usr/bin/skopeo",
    ["copy", "--override-os", "linux", "--override-arch", ARCH, ...copyArgs, dockerTransport(o.ref), `oci:${layout}:image`],
    { ...o, cwd: o.work },
  );
  o.progress(50);
  let index: { manifests?: { digest?: unknown }[] } | null = null;
  try {
    index = JSON.parse(await fs.promises.readFile(path.join(layout, "index.json"), "utf8"));
  } catch {
    // no index: refused just below
  }
  const first = Array.isArray(index?.manifests) ? index.manifests[0] : undefined;
  const digest = /^sha256:([a-f0-9]{64})$/.exec(typeof first?.digest === "string" ? first.digest : "")?.[1];
  if (!digest) throw new ToolError("the pulled image has no manifest digest");
  await checkEntries(o, layout, digest);
  const bundle = path.join(o.work, "bundle");
  o.log("unpacking layers");
  await runTool(
    "/usr/bin/prlimit",
    [`--fsize=${o.maxFileBytes}`, "--", "/usr/bin/umoci", "unpack", "--rootless", "--image", `${layout}:image`, bundle],
    { ...o, cwd: o.work },
  ).catch((err: unknown) => {
    if (err instanceof ToolError && /file too large/i.test(err.message)) {
      throw new ToolError(
        `a file in the image is larger than the unpacked limit of ${Math.round(o.maxFileBytes / 2 ** 20)} MiB (AGENTBOX_TEMPLATE_MAX_ROOTFS_MB); ${err.message}`,
      );
    }
    throw err;
  });
  o.progress(80);
  return { tree: path.join(bundle, "rootfs"), digest };
}
