// envd's directory watches, by polling: the sandbox's supervisor has no file-event source, so a
// watch lists the directory (the sandbox's own file-list operation) every WATCH_INTERVAL_MS and
// reports the difference: new names as create, changed size or modification time as write,
// vanished names as remove. A recursive watch lists the whole tree each time (one listing per
// directory, AGENTBOX_MAX_LIST_FILES entries in all) and names entries by their path under the
// watched directory, as envd does. Two ways to follow one: WatchDir streams the events, and a
// polled watcher (CreateWatcher, GetWatcherEvents, RemoveWatcher: the Python SDK's synchronous
// watch_dir) keeps them until asked, bounded (AGENTBOX_E2B_WATCHER_EVENT_BYTES) and expired when
// nobody asks (AGENTBOX_E2B_WATCHER_IDLE_S). Both count against AGENTBOX_E2B_MAX_WATCHERS per
// sandbox and AGENTBOX_E2B_MAX_WATCHERS_PER_TENANT per tenant.
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { ApiError, invalid } from "../errors.js";
import type { Box } from "../sandbox/box.js";
import { type FileEntry, listDir, statPath } from "../sandbox/files.js";
import type { ServerStream } from "./connect.js";
import { ConnectError } from "./errors.js";
import { EventQueue } from "./event-queue.js";

/** How often a watched directory is listed; events are at most this late. */
export const WATCH_INTERVAL_MS = 250;

type EventType = "EVENT_TYPE_CREATE" | "EVENT_TYPE_WRITE" | "EVENT_TYPE_REMOVE";

/** envd's FilesystemEvent (JSON). */
export interface FilesystemEvent {
  name: string;
  type: EventType;
}

type Listing = Map<string, string>;

/** A listing reduced to what tells a change: name → size and modification time. */
function snapshot(entries: FileEntry[]): Map<string, string> {
  return new Map(entries.map((e) => [e.name, `${e.size}:${e.modified_at}`]));
}

/**
 * The tree under `root`, breadth first, as relative path → stamp: at most `maxEntries` entries in
 * all, symlinks not followed (the listing does not follow them). A directory's stamp is only that
 * it is one: files created in it are their own events, not a write of the directory.
 */
async function treeSnapshot(box: Box, root: string, maxEntries: number): Promise<Map<string, string>> {
  const tree = new Map<string, string>();
  const queue = [""];
  for (let next = queue.shift(); next !== undefined && tree.size < maxEntries; next = queue.shift()) {
    const dir = next;
    let entries: FileEntry[];
    try {
      entries = await listDir(box, dir === "" ? root : `${root}/${dir}`, maxEntries - tree.size);
    } catch (err) {
      // A directory removed during the walk: its entries are gone (the root's own listing must work).
      if (dir === "" || !(err instanceof ApiError)) throw err;
      continue;
    }
    for (const e of entries) {
      if (isStagingFile(e.name)) continue;
      const name = dir === "" ? e.name : `${dir}/${e.name}`;
      tree.set(name, e.is_dir ? "dir" : `${e.size}:${e.modified_at}`);
      if (e.is_dir) queue.push(name);
    }
  }
  return tree;
}

/**
 * A write's temporary file (runtime/agentbox_rt/files.py writes `.upload-<16 hex>.part` beside its
 * target and renames it into place): E2B's watchers never show such a file, so neither do these.
 */
export const isStagingFile = (name: string): boolean => /^\.upload-[0-9a-f]{16}\.part$/.test(name);

/** The events that turn listing `before` into `after`, in name order per kind. */
export function diff(before: Listing, after: Listing): FilesystemEvent[] {
  const events: FilesystemEvent[] = [];
  for (const [name, stamp] of after) {
    const old = before.get(name);
    if (old === undefined) events.push({ name, type: "EVENT_TYPE_CREATE" });
    else if (old !== stamp) events.push({ name, type: "EVENT_TYPE_WRITE" });
  }
  for (const name of before.keys()) if (!after.has(name)) events.push({ name, type: "EVENT_TYPE_REMOVE" });
  return events;
}

/** A directory to watch, as the caller named it, resolved and checked once the watch starts. */
interface Watched {
  path: string;
  recursive: boolean;
  maxEntries: number;
}

/** The listing of a checked directory, in the form `diff` compares. */
async function listing(box: Box, dir: string, w: Watched): Promise<Listing> {
  return w.recursive ? treeSnapshot(box, dir.replace(/\/+$/, "") || "/", w.maxEntries) : snapshot(await listDir(box, dir, w.maxEntries));
}

/** `path`'s resolved name, once it is known to be a directory (not_found, or invalid_request). */
async function directory(box: Box, path: string): Promise<string> {
  const st = await statPath(box, path);
  if (!st.exists) throw new ApiError("file_not_found", `'${st.path}' does not exist`);
  if (!st.isDir) throw invalid(`'${st.path}' is not a directory`);
  return st.path;
}

/**
 * Lists every WATCH_INTERVAL_MS from `seen` on and hands each tick's differences to `emit` until
 * `signal` aborts. A listing of `undefined` (nothing to list now, e.g. the sandbox is paused)
 * skips the tick; a listing that fails ends the loop with its error.
 */
async function follow(list: () => Promise<Listing | undefined>, seen: Listing, signal: AbortSignal, emit: (e: FilesystemEvent[]) => void) {
  let last = seen;
  while (!signal.aborted) {
    await sleep(WATCH_INTERVAL_MS, undefined, { signal }).catch(() => {});
    if (signal.aborted) break;
    const now = await list();
    if (now === undefined) continue;
    const events = diff(last, now);
    if (events.length > 0) emit(events);
    last = now;
  }
}

/** The bounds of every watch: places per sandbox and per tenant, a polled watcher's events and idle time. */
export interface WatchLimits {
  perSandbox: number;
  perTenant: number;
  /** Bytes of events a polled watcher keeps between two asks (beside its `maxEntries` events). */
  eventBytes: number;
  /** A polled watcher not asked for this long is stopped and forgotten, ms. */
  idleMs: number;
}

/** A watch kept for its client to ask for its events (CreateWatcher). */
interface Polled {
  sandboxId: string;
  controller: AbortController;
  /** Events since the client last asked, bounded in count and bytes (the oldest dropped first). */
  events: EventQueue<FilesystemEvent>;
  /** Why the watch ended by itself (its directory went away, ...): told on the next ask. Its events are freed then. */
  failure?: ApiError;
  /** When the client last asked (or created it): an idle watcher expires. */
  askedAt: number;
  release: () => void;
}

/** Ended watches kept for their error per sandbox, beyond which the oldest are forgotten. */
const FAILED_PER_SANDBOX = 64;

/** What is kept of a watch's error: its code and a bounded message, not the error (its stack, its cause). */
function failureOf(err: unknown): ApiError {
  if (err instanceof ApiError) return new ApiError(err.code, err.message.slice(0, 500));
  return new ApiError("internal_error", `The watch ended: ${String((err as Error)?.message ?? err).slice(0, 500)}`);
}

/** Counts of places held per key (a sandbox, a tenant). */
class Places {
  private readonly held = new Map<string, number>();
  count(key: string): number {
    return this.held.get(key) ?? 0;
  }
  add(key: string, n: number): void {
    const left = this.count(key) + n;
    if (left <= 0) this.held.delete(key);
    else this.held.set(key, left);
  }
}

/** The directory watches of every sandbox: streamed ones and polled ones, bounded per sandbox and per tenant. */
export class Watchers {
  private readonly bySandbox = new Places();
  private readonly byTenant = new Places();
  private readonly polled = new Map<string, Polled>();
  private readonly sweeper: NodeJS.Timeout;
  /** Events dropped from full queues since the start (the oldest first). */
  dropped = 0;

  constructor(private readonly limits: WatchLimits) {
    // Idle watchers are found by a slow sweep: a few per second at most, nothing on any request's path.
    this.sweeper = setInterval(() => this.expire(Date.now()), Math.min(30_000, Math.max(250, limits.idleMs / 4)));
    this.sweeper.unref();
  }

  /** Counts one more watch of the sandbox and its tenant (refused at either limit); returns its release. */
  private reserve(tenantId: string, sandboxId: string): () => void {
    const n = this.bySandbox.count(sandboxId);
    if (n >= this.limits.perSandbox)
      throw new ApiError("rate_limited", `This sandbox already has ${n} directory watches, its limit; stop one first`, 1);
    const t = this.byTenant.count(tenantId);
    if (t >= this.limits.perTenant)
      throw new ApiError(
        "rate_limited",
        `This tenant already has ${t} directory watches open over its sandboxes, its limit (AGENTBOX_E2B_MAX_WATCHERS_PER_TENANT); stop one first`,
        1,
      );
    this.bySandbox.add(sandboxId, 1);
    this.byTenant.add(tenantId, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.bySandbox.add(sandboxId, -1);
      this.byTenant.add(tenantId, -1);
    };
  }

  /** WatchDir: streams `path`'s changes into `stream` until the client goes away or the call's deadline passes. */
  async watch(
    box: Box,
    tenantId: string,
    sandboxId: string,
    path: string,
    maxEntries: number,
    stream: ServerStream,
    recursive = false,
  ): Promise<void> {
    const w = { path, recursive, maxEntries };
    const dir = await directory(box, path);
    const release = this.reserve(tenantId, sandboxId);
    try {
      const seen = await listing(box, dir, w);
      stream.send({ start: {} });
      await follow(
        () => listing(box, dir, w),
        seen,
        stream.signal,
        (events) => {
          for (const event of events) stream.send({ filesystem: event });
        },
      );
      if (stream.deadlinePassed) throw new ConnectError("deadline_exceeded", `The watch of '${dir}' reached the call's timeout`);
    } finally {
      release();
    }
  }

  /**
   * CreateWatcher: starts a polled watch of `path` and answers its id once the directory's first
   * listing is taken (a change after the answer is an event). `boxOf` gives the sandbox at each
   * tick: a paused sandbox (sandbox_paused) is skipped, not an error.
   */
  async create(
    boxOf: () => Promise<Box>,
    tenantId: string,
    sandboxId: string,
    path: string,
    maxEntries: number,
    recursive = false,
  ): Promise<string> {
    const w = { path, recursive, maxEntries };
    const box = await boxOf();
    const dir = await directory(box, path);
    const release = this.reserve(tenantId, sandboxId);
    let seen: Listing;
    try {
      seen = await listing(box, dir, w);
    } catch (err) {
      release();
      throw err;
    }
    const id = randomUUID();
    const events = new EventQueue<FilesystemEvent>(maxEntries, this.limits.eventBytes);
    const watcher: Polled = { sandboxId, controller: new AbortController(), events, askedAt: Date.now(), release };
    this.polled.set(id, watcher);
    const list = async () => {
      try {
        return await listing(await boxOf(), dir, w);
      } catch (err) {
        if (err instanceof ApiError && err.code === "sandbox_paused") return undefined;
        throw err;
      }
    };
    const keep = (found: FilesystemEvent[]) => {
      const before = events.length + found.length;
      events.push(found);
      this.dropped += Math.max(0, before - events.length);
    };
    void follow(list, seen, watcher.controller.signal, keep)
      .catch((err: unknown) => {
        // Only the error is kept for the client's next ask: its events are freed now, and its
        // record is forgotten when told, when idle too long, or when too many others ended.
        watcher.failure = failureOf(err);
        events.clear();
        this.forgetFailedBeyond(sandboxId);
      })
      .finally(release);
    return id;
  }

  /** Keeps at most FAILED_PER_SANDBOX ended watches of the sandbox (the oldest are forgotten). */
  private forgetFailedBeyond(sandboxId: string): void {
    const failed = [...this.polled].filter(([, w]) => w.sandboxId === sandboxId && w.failure);
    for (const [key] of failed.slice(0, Math.max(0, failed.length - FAILED_PER_SANDBOX))) this.polled.delete(key);
  }

  /** Stops and forgets every polled watcher not asked for `idleMs` (as of `now`). */
  expire(now: number): void {
    for (const [key, watcher] of this.polled) {
      if (now - watcher.askedAt < this.limits.idleMs) continue;
      this.forget(key, watcher);
    }
  }

  private forget(key: string, watcher: Polled): void {
    this.polled.delete(key);
    watcher.controller.abort();
    watcher.events.clear();
  }

  /** The sandbox's polled watcher `id`, else not_found (another sandbox's is not found either). */
  private polledOf(sandboxId: string, id: unknown): [string, Polled] {
    const watcher = typeof id === "string" ? this.polled.get(id) : undefined;
    if (!watcher || watcher.sandboxId !== sandboxId)
      throw new ApiError("not_found", `No watcher '${String(id).slice(0, 80)}' in this sandbox`);
    return [id as string, watcher];
  }

  /** GetWatcherEvents: the events since the last ask. A watch that ended by itself answers its error, once, and is gone. */
  events(sandboxId: string, id: unknown): FilesystemEvent[] {
    const [key, watcher] = this.polledOf(sandboxId, id);
    if (watcher.failure) {
      this.polled.delete(key);
      throw watcher.failure;
    }
    watcher.askedAt = Date.now();
    return watcher.events.take().events;
  }

  /** RemoveWatcher: stops the watch (its slot is free once its current listing, if any, is done). */
  remove(sandboxId: string, id: unknown): void {
    const [key, watcher] = this.polledOf(sandboxId, id);
    this.forget(key, watcher);
  }

  /** A sandbox ended: its polled watchers stop and are forgotten. */
  dropSandbox(sandboxId: string): void {
    for (const [key, watcher] of this.polled) if (watcher.sandboxId === sandboxId) this.forget(key, watcher);
  }

  /** What the polled watchers hold now, for the metrics: records (live or ended), events and their bytes. */
  held(): { records: number; events: number; bytes: number } {
    let events = 0;
    let bytes = 0;
    for (const w of this.polled.values()) {
      events += w.events.length;
      bytes += w.events.bytes;
    }
    return { records: this.polled.size, events, bytes };
  }

  /** Stops the idle sweep (the service is closing). */
  close(): void {
    clearInterval(this.sweeper);
  }
}
