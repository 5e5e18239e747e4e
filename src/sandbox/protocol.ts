// The supervisor protocol: every frame between the service and a sandbox's supervisor
// (runtime/agentbox_rt/protocol.py on the other side), typed both ways. Frames are
// u32 total length (everything after this field), u32 header length, JSON header, raw body.
// Requests carry `op` and an `id`; events carry `ev` and the id of the request they answer.
// What comes from a sandbox is untrusted: FrameDecoder checks sizes and decodeEvent checks
// every field once, so nothing past this module reads a raw header.

/** Largest frame either side sends or accepts (header and body). Bulk data travels in chunks of FILE_CHUNK. */
export const MAX_FRAME = 16 * 2 ** 20;
/** Largest JSON header accepted from a sandbox (a directory listing is the biggest). */
export const MAX_HEADER = 8 * 2 ** 20;
/** Bytes per chunk of a download or upload through the channel. */
export const FILE_CHUNK = 2 ** 20;

import { type ArchiveEvent, type ArchiveRequest, decodeArchiveEvent } from "./archive-protocol.js";
import { type BgEvent, type BgRequest, decodeBgEvent } from "./background-protocol.js";
import type { KernelKind, Language } from "./languages.js";

export type { Language };

// ---- requests (service → supervisor) ----

export type FileAction = "read" | "write" | "list" | "delete" | "mkdir" | "stat";

export type Request =
  | {
      op: "run";
      kernel: string;
      lang: Language;
      /** The process to launch when the kernel is not running yet (the language table's `kernel`). */
      kind: KernelKind;
      timeout_ms: number;
      output_cap: number;
      async: boolean;
      env?: Record<string, string>;
      cwd?: string;
    }
  | { op: "exec"; command: string; cwd?: string; env?: Record<string, string>; timeout_ms: number; output_cap: number }
  | { op: "start_kernel"; kernel: string; lang: Language; kind: KernelKind; cwd: string }
  | { op: "kill_kernel"; kernel: string }
  /** Interrupts the run or command of request `target` (its client stopped waiting): answered by `ok`. */
  | { op: "cancel"; target: string }
  | BgRequest
  | ArchiveRequest
  | { op: "setenv"; env: Record<string, string> }
  | { op: "stats" }
  | { op: "ping" }
  /** Start the network relay (runtime/agentbox_rt/netrelay.py) unless it runs, and set the proxy variables (`env`, unless null): answered by `ok`. */
  | { op: "net"; egress_port: number; env: Record<string, string> | null }
  /** Start the kernel that pre-imports the data stack while the sandbox waits in the pool: answered by `ok`. */
  | { op: "prewarm" }
  /** One whole-file operation; `write` carries the bytes as the body. */
  | { op: "file"; action: FileAction; path: string; limit?: number; default_name?: string }
  /** Opens a file for a chunked download: answered by `file` with a handle and the size. */
  | { op: "open_read"; path: string; limit: number }
  /** The next bytes of an open download: answered by `chunk` (an empty body at the end). */
  | { op: "read_chunk"; handle: number; max: number }
  /** Starts a chunked upload into a temporary file: answered by `file` with a handle. */
  | { op: "open_write"; path?: string }
  /** Bytes of an upload (the body): answered by `ok`, or `file` with a refusal (e.g. no_space). */
  | { op: "write_chunk"; handle: number }
  /** Moves a finished upload to `path`: answered by `file`. */
  | { op: "commit"; handle: number; path: string; default_name?: string }
  /** Drops an open download or an unfinished upload (its temporary file is removed): answered by `ok`. */
  | { op: "close"; handle: number };

export type RequestOp = Request["op"];

// ---- events (supervisor → service) ----

export type FileStatus = "ok" | "not_found" | "is_dir" | "too_large" | "no_space" | "invalid";

export interface FileEntry {
  name: string;
  path: string;
  size: number;
  is_dir: boolean;
  modified_at: string;
  mode: string;
}

/** One rich result of a run (notebook semantics): any of the representations, base64 for images. */
export interface RichResult {
  text?: string;
  html?: string;
  markdown?: string;
  png?: string;
  jpeg?: string;
  svg?: string;
  json?: unknown;
  latex?: string;
  is_main_result?: boolean;
}

export interface DoneEvent {
  ev: "done";
  id: string;
  error?: string;
  rc?: number;
  exit_status?: number;
  state_lost?: boolean;
  timed_out?: boolean;
  truncated?: boolean;
  elapsed_ms?: number;
  exec_ms?: number;
}

export interface ExitEvent {
  ev: "exit";
  id: string;
  exit_status?: number;
  timed_out?: boolean;
  truncated?: boolean;
  elapsed_ms?: number;
  bad_cwd?: string;
  spawn_error?: string;
}

export interface FileEvent {
  ev: "file";
  id: string;
  status: FileStatus;
  path?: string;
  size?: number;
  message?: string;
  files?: FileEntry[];
  total?: number;
  exists?: boolean;
  is_dir?: boolean;
  handle?: number;
}

export type Event =
  | { ev: "ready"; pid: number }
  | { ev: "out"; id: string; stream: 1 | 2; body: Buffer }
  /** A rich result of a run; `result` is absent when the supervisor dropped one too large to send (`bytes` says how large). */
  | { ev: "result"; id: string; result?: RichResult; bytes: number }
  /** Bytes of a download, as the pieces they arrived in (not copied into one buffer). */
  | { ev: "chunk"; id: string; parts: Buffer[]; size: number }
  | DoneEvent
  | ExitEvent
  | FileEvent
  | BgEvent
  | ArchiveEvent
  | { ev: "stats"; id: string; disk_read: number; disk_write: number; network_rx: number; network_tx: number }
  | { ev: "ok"; id: string }
  | { ev: "error"; id: string; message: string };

/** Made up by the service, never sent by a sandbox: its process ended (`gone`), or a run outlived its backstop. */
export type Synthetic = { ev: "gone" } | { ev: "backstop" };

export type Reply = Event | Synthetic;

export class ProtocolError extends Error {}

const EMPTY = Buffer.alloc(0);

// ---- encoding ----

/** Bodies smaller than this are copied into the frame's one buffer (one write); larger ones are not copied. */
const COPY_BODY_BELOW = 64 * 1024;

/** The frame for one request, as buffers to write in order. */
export function encodeRequest(id: string, req: Request, body?: Buffer): Buffer[] {
  // The id is spliced into the serialized request rather than spread into a copy of it (hot path).
  const json = JSON.stringify(req);
  const header = Buffer.from(`${json.slice(0, -1)},"id":${JSON.stringify(id)}}`);
  const bodyLen = body?.length ?? 0;
  const total = 4 + header.length + bodyLen;
  if (total > MAX_FRAME) throw new ProtocolError(`frame of ${total} bytes exceeds the limit of ${MAX_FRAME}`);
  const small = bodyLen < COPY_BODY_BELOW;
  const head = Buffer.allocUnsafe(8 + header.length + (small ? bodyLen : 0));
  head.writeUInt32BE(total, 0);
  head.writeUInt32BE(header.length, 4);
  header.copy(head, 8);
  if (small) {
    if (body && bodyLen) body.copy(head, 8 + header.length);
    return [head];
  }
  return [head, body as Buffer];
}

/** Encodes an event as a supervisor would (tests, and anything standing in for a sandbox). */
export function encodeEvent(header: Record<string, unknown>, body: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.allocUnsafe(8);
  prefix.writeUInt32BE(4 + h.length + body.length, 0);
  prefix.writeUInt32BE(h.length, 4);
  return Buffer.concat([prefix, h, body]);
}

// ---- decoding ----

/**
 * Splits the byte stream from a sandbox into frames. Keeps the received chunks in a list and
 * copies each frame's bytes once (no re-concatenation of everything buffered per chunk).
 * Throws ProtocolError on a frame that is too large or malformed: the sandbox must then be ended.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private have = 0;
  /** Total length of the frame being received, once its prefix is in. */
  private need = -1;
  private hlen = 0;

  constructor(private readonly maxFrame = MAX_FRAME) {}

  /** Bytes held for an incomplete frame. */
  get buffered(): number {
    return this.have;
  }

  push(chunk: Buffer): Event[] {
    if (chunk.length) {
      this.chunks.push(chunk);
      this.have += chunk.length;
    }
    const events: Event[] = [];
    for (;;) {
      if (this.need < 0) {
        if (this.have < 8) break;
        const prefix = this.take(8);
        const total = prefix.readUInt32BE(0);
        const hlen = prefix.readUInt32BE(4);
        if (total > this.maxFrame) throw new ProtocolError(`frame of ${total} bytes exceeds the limit of ${this.maxFrame}`);
        if (total < 4 || hlen > total - 4 || hlen > MAX_HEADER) throw new ProtocolError("malformed frame prefix");
        this.need = total - 4;
        this.hlen = hlen;
      }
      if (this.have < this.need) break;
      const bodyLen = this.need - this.hlen;
      const head = this.take(this.hlen);
      this.need = -1;
      let header: unknown;
      try {
        header = JSON.parse(head.toString("utf8"));
      } catch {
        throw new ProtocolError("frame header is not JSON");
      }
      // Bulk data is handed on as the views it arrived in: no copy, no 1 MiB allocation per chunk.
      const h = header as { ev?: unknown; id?: unknown } | null;
      if (h !== null && typeof h === "object" && h.ev === "chunk") {
        const parts = this.takeViews(bodyLen);
        if (typeof h.id === "string") events.push({ ev: "chunk", id: h.id, parts, size: bodyLen });
        continue;
      }
      const event = decodeEvent(header, this.take(bodyLen));
      if (event) events.push(event);
    }
    return events;
  }

  /** Removes and returns the next n bytes as views of the chunks they lie in. */
  private takeViews(n: number): Buffer[] {
    this.have -= n;
    const out: Buffer[] = [];
    while (n > 0) {
      const c = this.chunks[0] as Buffer;
      if (c.length <= n) {
        out.push(c);
        this.chunks.shift();
        n -= c.length;
      } else {
        out.push(c.subarray(0, n));
        this.chunks[0] = c.subarray(n);
        n = 0;
      }
    }
    return out;
  }

  /** Removes and returns the next n bytes (a view when they lie in one chunk, else one copy). */
  private take(n: number): Buffer {
    if (n === 0) return EMPTY;
    this.have -= n;
    const first = this.chunks[0] as Buffer;
    if (first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let off = 0;
    while (off < n) {
      const c = this.chunks[0] as Buffer;
      const part = Math.min(c.length, n - off);
      c.copy(out, off, 0, part);
      off += part;
      if (part === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(part);
    }
    return out;
  }
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const bool = (v: unknown): boolean | undefined => (typeof v === "boolean" ? v : undefined);
const nonNeg = (v: unknown): number => Math.max(0, num(v) ?? 0);

/** Drops undefined fields so that decoded events compare and print cleanly. */
function defined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

const FILE_STATUSES = new Set<FileStatus>(["ok", "not_found", "is_dir", "too_large", "no_space", "invalid"]);
const RESULT_KEYS = ["text", "html", "markdown", "png", "jpeg", "svg", "latex"] as const;

function decodeEntry(v: unknown): FileEntry | undefined {
  if (typeof v !== "object" || v === null) return undefined;
  const e = v as Record<string, unknown>;
  const name = str(e.name);
  const path = str(e.path);
  if (name === undefined || path === undefined) return undefined;
  return {
    name,
    path,
    size: nonNeg(e.size),
    is_dir: e.is_dir === true,
    modified_at: str(e.modified_at) ?? "",
    mode: str(e.mode) ?? "",
  };
}

/** A rich result from its JSON body: only the known representations, each of the right type. */
export function decodeResult(body: Buffer): RichResult | undefined {
  let v: unknown;
  try {
    v = JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  const r: RichResult = {};
  for (const k of RESULT_KEYS) {
    const s = str(o[k]);
    if (s !== undefined) r[k] = s;
  }
  if (o.json !== undefined) r.json = o.json;
  const main = bool(o.is_main_result);
  if (main !== undefined) r.is_main_result = main;
  return r;
}

/**
 * One event from a decoded header and its body, every field checked for its type (a field of the
 * wrong type is left out). An unknown event, or one without the id it must carry, is dropped (null).
 */
export function decodeEvent(header: unknown, body: Buffer): Event | null {
  if (typeof header !== "object" || header === null || Array.isArray(header)) throw new ProtocolError("frame header is not an object");
  const h = header as Record<string, unknown>;
  const ev = h.ev;
  if (ev === "ready") return { ev, pid: nonNeg(h.pid) };
  const id = str(h.id);
  if (id === undefined) return null;
  switch (ev) {
    case "out":
      return { ev, id, stream: h.stream === 2 ? 2 : 1, body };
    case "chunk":
      return { ev, id, parts: body.length ? [body] : [], size: body.length };
    case "result": {
      const tooLarge = num(h.too_large);
      if (tooLarge !== undefined) return { ev, id, bytes: Math.max(0, tooLarge) };
      const result = decodeResult(body);
      return result ? { ev, id, result, bytes: body.length } : null;
    }
    case "done":
      return defined({
        ev,
        id,
        error: str(h.error),
        rc: num(h.rc),
        exit_status: num(h.exit_status),
        state_lost: bool(h.state_lost),
        timed_out: bool(h.timed_out),
        truncated: bool(h.truncated),
        elapsed_ms: num(h.elapsed_ms),
        exec_ms: num(h.exec_ms),
      });
    case "exit":
      return defined({
        ev,
        id,
        exit_status: num(h.exit_status),
        timed_out: bool(h.timed_out),
        truncated: bool(h.truncated),
        elapsed_ms: num(h.elapsed_ms),
        bad_cwd: str(h.bad_cwd),
        spawn_error: str(h.spawn_error),
      });
    case "file": {
      const status = FILE_STATUSES.has(h.status as FileStatus) ? (h.status as FileStatus) : "invalid";
      const files = Array.isArray(h.files) ? h.files.map(decodeEntry).filter((e): e is FileEntry => e !== undefined) : undefined;
      return defined({
        ev,
        id,
        status,
        path: str(h.path),
        size: num(h.size),
        message: str(h.message),
        files,
        total: num(h.total),
        exists: bool(h.exists),
        is_dir: bool(h.is_dir),
        handle: num(h.handle),
      });
    }
    case "stats":
      return {
        ev,
        id,
        disk_read: nonNeg(h.disk_read),
        disk_write: nonNeg(h.disk_write),
        network_rx: nonNeg(h.network_rx),
        network_tx: nonNeg(h.network_tx),
      };
    case "bg":
      return decodeBgEvent(id, h, body);
    case "archive":
      return decodeArchiveEvent(id, h);
    case "ok":
      return { ev, id };
    case "error":
      return { ev, id, message: str(h.message) ?? "error" };
    default:
      return null;
  }
}
