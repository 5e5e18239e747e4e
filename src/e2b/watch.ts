// envd's filesystem.Filesystem/WatchDir, by polling: the sandbox's supervisor has no file-event
// source, so a watch lists the directory (the sandbox's own file-list operation) every
// WATCH_INTERVAL_MS and streams the difference: new names as create, changed size or modification
// time as write, vanished names as remove. A recursive watch lists the whole tree each time (one
// listing per directory, AGENTBOX_MAX_LIST_FILES entries in all) and names entries by their path
// under the watched directory, as envd does. At most AGENTBOX_E2B_MAX_WATCHERS per sandbox.
import { setTimeout as sleep } from "node:timers/promises";
import { ApiError, invalid } from "../errors.js";
import type { Box } from "../sandbox/box.js";
import { type FileEntry, listDir, statPath } from "../sandbox/files.js";
import type { ServerStream } from "./connect.js";
import { ConnectError } from "./errors.js";

/** How often a watched directory is listed; events are at most this late. */
export const WATCH_INTERVAL_MS = 250;

type EventType = "EVENT_TYPE_CREATE" | "EVENT_TYPE_WRITE" | "EVENT_TYPE_REMOVE";

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
      const name = dir === "" ? e.name : `${dir}/${e.name}`;
      tree.set(name, e.is_dir ? "dir" : `${e.size}:${e.modified_at}`);
      if (e.is_dir) queue.push(name);
    }
  }
  return tree;
}

/** The events that turn listing `before` into `after`, in name order per kind. */
export function diff(before: Map<string, string>, after: Map<string, string>): { name: string; type: EventType }[] {
  const events: { name: string; type: EventType }[] = [];
  for (const [name, stamp] of after) {
    const old = before.get(name);
    if (old === undefined) events.push({ name, type: "EVENT_TYPE_CREATE" });
    else if (old !== stamp) events.push({ name, type: "EVENT_TYPE_WRITE" });
  }
  for (const name of before.keys()) if (!after.has(name)) events.push({ name, type: "EVENT_TYPE_REMOVE" });
  return events;
}

/** Watches per sandbox, to bound the listing work one sandbox's clients can ask for. */
export class Watchers {
  private readonly bySandbox = new Map<string, number>();

  constructor(private readonly maxPerSandbox: number) {}

  /** Streams `path`'s changes into `stream` until the client goes away or the call's deadline passes. */
  async watch(box: Box, sandboxId: string, path: string, maxEntries: number, stream: ServerStream, recursive = false): Promise<void> {
    const st = await statPath(box, path);
    if (!st.exists) throw new ApiError("file_not_found", `'${st.path}' does not exist`);
    if (!st.isDir) throw invalid(`'${st.path}' is not a directory`);
    const n = this.bySandbox.get(sandboxId) ?? 0;
    if (n >= this.maxPerSandbox)
      throw new ApiError("rate_limited", `This sandbox already has ${n} directory watches, its limit; stop one first`, 1);
    this.bySandbox.set(sandboxId, n + 1);
    const list = async () =>
      recursive ? treeSnapshot(box, st.path.replace(/\/+$/, "") || "/", maxEntries) : snapshot(await listDir(box, st.path, maxEntries));
    try {
      let seen = await list();
      stream.send({ start: {} });
      while (!stream.signal.aborted) {
        await sleep(WATCH_INTERVAL_MS, undefined, { signal: stream.signal }).catch(() => {});
        if (stream.signal.aborted) break;
        const now = await list();
        for (const event of diff(seen, now)) stream.send({ filesystem: event });
        seen = now;
      }
      if (stream.deadlinePassed) throw new ConnectError("deadline_exceeded", `The watch of '${st.path}' reached the call's timeout`);
    } finally {
      const left = (this.bySandbox.get(sandboxId) ?? 1) - 1;
      if (left <= 0) this.bySandbox.delete(sandboxId);
      else this.bySandbox.set(sandboxId, left);
    }
  }
}
