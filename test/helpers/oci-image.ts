// OCI images made on this machine for the template tests, without any network: umoci lays out an
// empty image, the test fills its root filesystem (marker files, a copy of the host's own Python
// with only what it needs), umoci packs it as a layer, and skopeo pushes it to a local registry
// (Debian's docker-registry, started by the test on a free loopback port). The images every template
// test builds on (startTemplateRegistry) are made once per machine and kept as OCI layouts in the
// temp dir: each test file only pushes them to its own registry.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "./server.js";

export const haveImageTools = ["/usr/bin/skopeo", "/usr/bin/umoci", "/usr/bin/docker-registry"].every((f) => fs.existsSync(f));

export interface Registry {
  /** host:port */
  host: string;
  /** The registry's storage directory (a test may tamper with a stored blob). */
  storage: string;
  stop(): Promise<void>;
}

/** docker-registry on 127.0.0.1 with its storage in a temp dir; resolves once it answers. */
export async function startRegistry(): Promise<Registry> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-registry-"));
  const config = path.join(dir, "config.yml");
  fs.writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\nhttp:\n  addr: 127.0.0.1:${port}\n`,
  );
  const child: ChildProcess = spawn("/usr/bin/docker-registry", ["serve", config], { stdio: "ignore" });
  const host = `127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`http://${host}/v2/`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (i > 100) throw new Error("docker-registry did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    host,
    storage: path.join(dir, "data"),
    stop: async () => {
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Makes an OCI layout at `layout` (tag `t`) of one layer whose root filesystem `fill` writes. */
function buildLayout(layout: string, fill: (rootfs: string) => void): void {
  const bundle = `${layout}.bundle`;
  try {
    execFileSync("/usr/bin/umoci", ["init", "--layout", layout]);
    execFileSync("/usr/bin/umoci", ["new", "--image", `${layout}:t`]);
    execFileSync("/usr/bin/umoci", ["unpack", "--rootless", "--image", `${layout}:t`, bundle]);
    fill(path.join(bundle, "rootfs"));
    execFileSync("/usr/bin/umoci", ["repack", "--image", `${layout}:t`, bundle]);
  } finally {
    fs.rmSync(bundle, { recursive: true, force: true });
  }
}

/** Pushes the layout's image as registry/repo:1. */
function push(layout: string, registry: string, repo: string): string {
  const ref = `${registry}/${repo}:1`;
  execFileSync("/usr/bin/skopeo", ["copy", "--insecure-policy", "--dest-tls-verify=false", `oci:${layout}:t`, `docker://${ref}`], {
    stdio: "pipe",
  });
  return ref;
}

/** Builds a one-layer image whose root filesystem `fill` writes, and pushes it as registry/repo:1. */
export function buildAndPush(registry: string, repo: string, fill: (rootfs: string) => void): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-image-"));
  try {
    const layout = path.join(dir, "layout");
    buildLayout(layout, fill);
    return push(layout, registry, repo);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Bump when what the shared images hold changes: the cached layouts are made again. */
const SHARED_IMAGES_VERSION = 1;

/**
 * The layout of a shared test image, made the first time any test file asks for it on this machine
 * (named by its content's inputs: the host's python, which it copies) and reused after.
 */
function sharedLayout(name: string, fill: (rootfs: string) => void): string {
  const python = fs.realpathSync("/usr/bin/python3");
  const key = crypto
    .createHash("sha256")
    .update(JSON.stringify([SHARED_IMAGES_VERSION, name, python, fs.statSync(python).mtimeMs]))
    .digest("hex")
    .slice(0, 16);
  const layout = path.join(os.tmpdir(), `agentbox-test-image-${name}-${key}`);
  if (fs.existsSync(path.join(layout, "index.json"))) return layout;
  const tmp = `${layout}.${process.pid}.tmp`;
  fs.rmSync(tmp, { recursive: true, force: true });
  buildLayout(tmp, fill);
  try {
    fs.renameSync(tmp, layout);
  } catch {
    fs.rmSync(tmp, { recursive: true, force: true }); // made meanwhile by another process
  }
  return layout;
}

/** A local registry with the images the template tests build on, and a template directory for the server. */
export interface TemplateRegistry {
  registry: Registry;
  /**
   * A copy of the host's Python (and pip) with a package of its own (`imagepkg`), the host's dash
   * as /bin/sh, the public CA bundle and /opt/marker/MARKER ("from-the-image").
   */
  python: string;
  /** Nothing but /opt/marker/MARKER ("bare-image") and /etc/os-release: no Python, no shell. */
  bare: string;
  /** A template directory traversable by sandbox users, like the service's default place. */
  templateDir: string;
  /** The server's settings for these: this registry allowed (plain HTTP), that directory. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startTemplateRegistry(): Promise<TemplateRegistry> {
  const pythonLayout = sharedLayout("python", (rootfs) => {
    copyHostPython(rootfs);
    copyHostShell(rootfs);
    put(rootfs, "opt/marker/MARKER", "from-the-image\n");
    put(rootfs, "usr/lib/python3/dist-packages/imagepkg/__init__.py", "ORIGIN = 'imagepkg inside the image'\n");
    // The public CA bundle, as any image that fetches over HTTPS has (pip refuses to start without one).
    const ca = "/etc/ssl/certs/ca-certificates.crt";
    if (fs.existsSync(ca)) put(rootfs, ca.slice(1), fs.readFileSync(ca, "utf8"));
  });
  const bareLayout = sharedLayout("bare", (rootfs) => {
    put(rootfs, "opt/marker/MARKER", "bare-image\n");
    put(rootfs, "etc/os-release", "NAME=bare\n");
  });
  const registry = await startRegistry();
  const templateDir = fs.mkdtempSync(path.join("/var/tmp", "agentbox-templates-test-"));
  fs.chmodSync(templateDir, 0o711);
  return {
    registry,
    python: push(pythonLayout, registry.host, "test/python"),
    bare: push(bareLayout, registry.host, "test/bare"),
    templateDir,
    env: {
      AGENTBOX_TEMPLATE_DIR: templateDir,
      AGENTBOX_TEMPLATE_REGISTRIES: registry.host,
      AGENTBOX_TEMPLATE_INSECURE_REGISTRIES: registry.host,
      // Room for the Python image (about 70 MiB unpacked), not for a hostile sparse file.
      AGENTBOX_TEMPLATE_MAX_ROOTFS_MB: "200",
    },
    stop: async () => {
      await registry.stop();
      fs.rmSync(templateDir, { recursive: true, force: true });
    },
  };
}

/** Overwrites the first layer blob of registry/repo:1 in the registry's storage with as many other bytes. */
export async function corruptLayer(registry: Registry, repo: string): Promise<void> {
  const res = await fetch(`http://${registry.host}/v2/${repo}/manifests/1`, {
    headers: { accept: "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json" },
  });
  const manifest = (await res.json()) as { layers: { digest: string }[] };
  const hex = (manifest.layers[0]?.digest ?? "").replace("sha256:", "");
  const blob = path.join(registry.storage, "docker/registry/v2/blobs/sha256", hex.slice(0, 2), hex, "data");
  const size = fs.statSync(blob).size;
  fs.writeFileSync(blob, Buffer.alloc(size, 0x5a));
}

/** Writes a file (and its directories) into a root filesystem. */
export function put(rootfs: string, rel: string, content: string): void {
  const file = path.join(rootfs, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

/** The host's dash as the image's /bin/sh (after copyHostPython: the libraries it loads are there already). */
export function copyHostShell(rootfs: string): void {
  const dest = path.join(rootfs, "usr/bin/sh");
  fs.copyFileSync(fs.realpathSync("/bin/dash"), dest);
  fs.chmodSync(dest, 0o755);
}

/** The shared libraries a program or library loads (ldd's resolved paths). */
function libsOf(file: string): string[] {
  const out = execFileSync("ldd", [file], { encoding: "utf8" });
  return [...out.matchAll(/=>\s+(\/\S+)/g)].map((m) => m[1] as string);
}

/**
 * A copy of the host's Python interpreter in `rootfs` (merged-/usr layout): the binary, its
 * standard library without tests and GUI modules, and the libraries it and its extension modules
 * load, with the host's dynamic loader, and the host's pip. Returns its version directory (python3.N).
 */
export function copyHostPython(rootfs: string): string {
  const exe = fs.realpathSync("/usr/bin/python3");
  const version = path.basename(exe); // python3.N
  const libDir = path.dirname(fs.realpathSync("/lib64/ld-linux-x86-64.so.2"));
  const stdlib = `/usr/lib/${version}`;
  for (const d of ["usr/bin", "usr/lib64", libDir.slice(1)]) fs.mkdirSync(path.join(rootfs, d), { recursive: true });
  for (const [link, target] of [
    ["bin", "usr/bin"],
    ["lib", "usr/lib"],
    ["lib64", "usr/lib64"],
  ] as const)
    fs.symlinkSync(target, path.join(rootfs, link));
  fs.copyFileSync(exe, path.join(rootfs, "usr/bin", version));
  fs.chmodSync(path.join(rootfs, "usr/bin", version), 0o755);
  fs.symlinkSync(version, path.join(rootfs, "usr/bin/python3"));
  const skip = new Set(["test", "idlelib", "tkinter", "ensurepip", "lib2to3", "pydoc_data", "turtledemo"]);
  fs.cpSync(stdlib, path.join(rootfs, stdlib.slice(1)), {
    recursive: true,
    filter: (src) =>
      !skip.has(path.basename(src)) && !src.includes("/config-3") && !src.includes("site-packages") && !src.includes("dist-packages"),
  });
  const loader = fs.realpathSync("/lib64/ld-linux-x86-64.so.2");
  const libs = new Set<string>([loader]);
  const dynload = path.join(stdlib, "lib-dynload");
  for (const f of [exe, ...fs.readdirSync(dynload).map((n) => path.join(dynload, n))]) for (const l of libsOf(f)) libs.add(l);
  for (const lib of libs) {
    const dest = path.join(rootfs, libDir.slice(1), path.basename(lib));
    if (!fs.existsSync(dest)) fs.copyFileSync(fs.realpathSync(lib), dest);
  }
  fs.symlinkSync(`../lib/${path.basename(libDir)}/${path.basename(loader)}`, path.join(rootfs, "usr/lib64", path.basename(loader)));
  // pip, when the host has Debian's (pure Python): for the build-step tests' pip_install.
  const pip = "/usr/lib/python3/dist-packages/pip";
  if (fs.existsSync(pip)) fs.cpSync(pip, path.join(rootfs, pip.slice(1)), { recursive: true });
  return version;
}
