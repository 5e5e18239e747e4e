// Pulls a GGUF model into the data dir's models directory: streamed to `<name>.gguf.partial`,
// resumed with an HTTP Range request after an interruption (If-Range keeps a changed file from
// being stitched onto an old beginning), checked (GGUF magic, optional expected sha256), and only
// then renamed to `<name>.gguf` with a sidecar recording its sha256. A failed check deletes the
// download; an interrupted one keeps it for the next attempt.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { findModel, MODEL_NAME, type PulledModel, modelFile, modelsDir, writeSidecar } from "./registry.js";

export const DEFAULT_HF_BASE_URL = "https://huggingface.co";

export interface PullProgress {
  /** Bytes on disk so far (including what an earlier attempt left). */
  received: number;
  /** The whole file's size, when the server said. */
  total: number | undefined;
  /** Bytes this attempt started from (0, or what it resumed). */
  resumedFrom: number;
  phase: "download" | "verify";
}

export interface PullOptions {
  /** An https:// (or http://) URL, or hf:owner/repo/path/to/file.gguf. */
  source: string;
  dataDir: string;
  /** The model's name (default: the file name without .gguf). */
  name?: string;
  /** Expected hex sha256; a mismatch deletes the download. */
  sha256?: string;
  /** Where hf: references point (default https://huggingface.co). */
  hfBaseUrl?: string;
  /** Sent as a bearer token to the hf: base URL only (gated models). */
  hfToken?: string;
  onProgress?: (p: PullProgress) => void;
  signal?: AbortSignal;
  /** A server silent this long (before its answer or mid-body) ends the attempt, resumable (default 60 s). */
  stallMs?: number;
}

export class PullError extends Error {}

/** What an hf: reference or URL downloads from; a bad reference is a PullError. */
export function sourceUrl(source: string, hfBaseUrl = DEFAULT_HF_BASE_URL): URL {
  if (source.startsWith("hf:")) {
    const parts = source.slice(3).split("/");
    if (parts.length < 3 || parts.some((p) => p === "" || p === "." || p === ".."))
      throw new PullError(`'${source}' is not hf:OWNER/REPO/FILE.gguf`);
    const [owner, repo, ...file] = parts;
    const base = hfBaseUrl.replace(/\/+$/, "");
    const enc = (s: string) => encodeURIComponent(s);
    return new URL(`${base}/${enc(owner as string)}/${enc(repo as string)}/resolve/main/${file.map(enc).join("/")}`);
  }
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    throw new PullError(`'${source}' is neither an https:// URL nor hf:OWNER/REPO/FILE.gguf`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new PullError(`'${source}' must be an http(s) URL`);
  return url;
}

/** The default model name for a source: its file name without `.gguf`. */
export function defaultName(url: URL): string {
  const base = decodeURIComponent(path.posix.basename(url.pathname));
  return base.replace(/\.gguf$/i, "");
}

interface PartialMeta {
  url: string;
  validator?: string;
}

function readPartialMeta(file: string): PartialMeta | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as PartialMeta;
  } catch {
    return undefined;
  }
}

async function sha256Of(file: string): Promise<string> {
  const hash = crypto.createHash("sha256");
  await pipeline(fs.createReadStream(file, { highWaterMark: 1 << 20 }), hash);
  return hash.digest("hex");
}

function isGguf(file: string): boolean {
  const fd = fs.openSync(file, "r");
  try {
    const magic = Buffer.alloc(4);
    return fs.readSync(fd, magic, 0, 4, 0) === 4 && magic.toString("latin1") === "GGUF";
  } finally {
    fs.closeSync(fd);
  }
}

/** Downloads (or resumes) a model; resolves with the registry entry once it is in place. */
export async function pullModel(opts: PullOptions): Promise<PulledModel & { resumedFrom: number; existed: boolean }> {
  const hfBase = opts.hfBaseUrl ?? DEFAULT_HF_BASE_URL;
  const url = sourceUrl(opts.source, hfBase);
  const name = opts.name ?? defaultName(url);
  if (!MODEL_NAME.test(name) || name.endsWith(".gguf"))
    throw new PullError(`'${name}' is not a usable model name (1-128 letters, digits, '_', '.', '-'); give one with --name`);
  const expected = opts.sha256?.toLowerCase();
  if (expected !== undefined && !/^[0-9a-f]{64}$/.test(expected)) throw new PullError("--sha256 must be 64 hex digits");

  const existing = findModel(opts.dataDir, name);
  if (existing) {
    if (expected !== undefined && existing.sha256 !== expected)
      throw new PullError(`a model named '${name}' already exists with sha256 ${existing.sha256 ?? "(not recorded)"}; remove it first`);
    return { ...existing, resumedFrom: 0, existed: true };
  }

  fs.mkdirSync(modelsDir(opts.dataDir), { recursive: true });
  const final = modelFile(opts.dataDir, name);
  const partial = `${final}.partial`;
  const metaFile = `${partial}.json`;
  let start = 0;
  const meta = readPartialMeta(metaFile);
  if (meta?.url === url.href && fs.existsSync(partial)) start = fs.statSync(partial).size;

  const headers: Record<string, string> = { "user-agent": "agentbox-models-pull" };
  if (opts.hfToken && url.href.startsWith(`${hfBase.replace(/\/+$/, "")}/`)) headers.authorization = `Bearer ${opts.hfToken}`;
  if (start > 0) {
    headers.range = `bytes=${start}-`;
    if (meta?.validator) headers["if-range"] = meta.validator;
  }
  // A stalled connection is given up (and resumed by the next attempt) rather than waited on forever.
  const stall = new AbortController();
  const stallMs = opts.stallMs ?? 60_000;
  const timer = setTimeout(() => stall.abort(new Error(`no data for ${stallMs / 1000} s`)), stallMs).unref();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stall.signal]) : stall.signal;
  let res: Response;
  try {
    res = await fetch(url, { headers, redirect: "follow", signal });
  } catch (err) {
    throw new PullError(`cannot reach ${url.origin} (${(err as Error).cause ?? (err as Error).message})`);
  }
  let total: number | undefined;
  const length = res.headers.get("content-length");
  if (res.status === 416 && start > 0) {
    // Nothing left to send: the partial file may already be whole.
    const whole = Number(res.headers.get("content-range")?.match(/\*\/(\d+)/)?.[1]);
    await res.body?.cancel();
    if (whole !== start) {
      fs.rmSync(partial, { force: true });
      fs.rmSync(metaFile, { force: true });
      throw new PullError(`the server refused to resume at byte ${start}; the partial download was deleted, run the command again`);
    }
    total = start;
  } else if (res.status === 206 && start > 0) {
    const range = res.headers.get("content-range")?.match(/^bytes (\d+)-(\d+)\/(\d+|\*)$/);
    if (!range || Number(range[1]) !== start) {
      await res.body?.cancel();
      throw new PullError(`the server answered a resume at byte ${start} with the range '${res.headers.get("content-range")}'`);
    }
    total = range[3] === "*" ? undefined : Number(range[3]);
  } else if (res.status === 200) {
    start = 0; // a fresh download (no partial file, or the server does not resume / the file changed)
    total = length === null ? undefined : Number(length);
  } else {
    const text = (await res.text().catch(() => "")).slice(0, 200);
    throw new PullError(`${url.href} answered HTTP ${res.status}${text ? `: ${text}` : ""}`);
  }

  if (res.status !== 416) {
    const validator = res.headers.get("etag") ?? res.headers.get("last-modified") ?? undefined;
    // A weak ETag cannot be used in If-Range: fall back to no validator (resumes without the check).
    fs.writeFileSync(metaFile, JSON.stringify({ url: url.href, validator: validator?.startsWith("W/") ? undefined : validator }));
    let received = start;
    opts.onProgress?.({ received, total, resumedFrom: start, phase: "download" });
    const out = fs.createWriteStream(partial, { flags: start > 0 ? "a" : "w" });
    const body = Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>);
    body.on("data", (chunk: Buffer) => {
      timer.refresh();
      received += chunk.length;
      opts.onProgress?.({ received, total, resumedFrom: start, phase: "download" });
    });
    try {
      await pipeline(body, out);
    } catch (err) {
      clearTimeout(timer);
      throw new PullError(
        `the download was interrupted at ${received}${total ? ` of ${total}` : ""} bytes (${(err as Error).message}); ` +
          "run the same command again to resume",
      );
    }
    clearTimeout(timer);
    if (total !== undefined && received !== total)
      throw new PullError(`the download ended at ${received} of ${total} bytes; run the same command again to resume`);
  }

  const size = fs.statSync(partial).size;
  opts.onProgress?.({ received: size, total: size, resumedFrom: start, phase: "verify" });
  const discard = () => {
    fs.rmSync(partial, { force: true });
    fs.rmSync(metaFile, { force: true });
  };
  if (!isGguf(partial)) {
    discard();
    throw new PullError(`${url.href} is not a GGUF file (it does not start with 'GGUF'); nothing was kept`);
  }
  const sha256 = await sha256Of(partial);
  if (expected !== undefined && sha256 !== expected) {
    discard();
    throw new PullError(`sha256 mismatch: expected ${expected}, downloaded ${sha256}; nothing was kept`);
  }
  const fd = fs.openSync(partial, "r");
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  const pulledAt = new Date().toISOString();
  // The sidecar first: the model appears (by its .gguf name) only once it is complete and recorded.
  writeSidecar(final, { sha256, source: opts.source, pulled_at: pulledAt });
  fs.renameSync(partial, final);
  fs.rmSync(metaFile, { force: true });
  return { name, path: final, size, sha256, source: opts.source, created_at: pulledAt, resumedFrom: start, existed: false };
}
