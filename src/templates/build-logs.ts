// The logs of this node's builds: each held in memory (bounded, ./build-log.ts) while its build
// waits and runs and for a grace period after, for late readers; at its end written to the node's
// disk (as bounded) so the logs route still serves it once the memory copy is freed; and both gone
// when its template is deleted. A log file whose build has no record any more (its template was
// deleted on another node of a cluster) is swept at start and after a build's end (at most every
// SWEEP_EVERY_MS: each file is a lookup in the records).
import fs from "node:fs";
import path from "node:path";
import { BuildLog, type SavedLog } from "./build-log.js";

const SWEEP_EVERY_MS = 10 * 60_000;

interface Held {
  log: BuildLog;
  templateId: string;
  /** The grace timer of an ended build's memory copy. */
  timer?: NodeJS.Timeout;
}

export class BuildLogs {
  private readonly held = new Map<string, Held>();
  private lastSweep = 0;

  constructor(
    private readonly o: {
      dir: string;
      maxBytes: number;
      graceMs: number;
      /** Whether a build still has a record (its log file is kept only then). */
      exists(buildId: string): Promise<boolean>;
      log(fields: Record<string, unknown>, msg: string): void;
    },
  ) {
    fs.mkdirSync(o.dir, { recursive: true, mode: 0o700 });
  }

  /** A new build's log, held in memory until its end and grace. */
  open(buildId: string, templateId: string): BuildLog {
    const log = new BuildLog(this.o.maxBytes);
    this.held.set(buildId, { log, templateId });
    return log;
  }

  /** Logs held in memory now, and what they hold (for metrics). */
  inMemory(): { count: number; bytes: number } {
    let bytes = 0;
    for (const h of this.held.values()) bytes += h.log.bytes;
    return { count: this.held.size, bytes };
  }

  /** Whether this node holds the build's log in memory (it runs, or ran it lately). */
  has(buildId: string): boolean {
    return this.held.has(buildId);
  }

  private fileOf(buildId: string): string {
    // Build ids are made here (`bld_` + base64url), never taken from a request unchecked: see get().
    return path.join(this.o.dir, `${buildId}.json`);
  }

  /** The build has ended: its log closed, saved to disk, and freed from memory after the grace period. */
  async ended(buildId: string): Promise<void> {
    const h = this.held.get(buildId);
    if (!h) return;
    h.log.close();
    try {
      const tmp = `${this.fileOf(buildId)}.tmp`;
      await fs.promises.writeFile(tmp, JSON.stringify(h.log.saved()), { mode: 0o600 });
      await fs.promises.rename(tmp, this.fileOf(buildId));
    } catch (err) {
      this.o.log({ err, build_id: buildId }, "template build log not saved");
    }
    // Its template may have been deleted meanwhile (a cancelled build's): nothing to keep then.
    if (this.held.get(buildId) !== h) return;
    h.timer = setTimeout(() => {
      if (this.held.get(buildId) === h) this.held.delete(buildId);
    }, this.o.graceMs);
    h.timer.unref();
    if (Date.now() - this.lastSweep > SWEEP_EVERY_MS) await this.sweep();
  }

  /** The build's log: the memory copy, else the saved one; undefined when neither is here. */
  async get(buildId: string): Promise<BuildLog | undefined> {
    const h = this.held.get(buildId);
    if (h) return h.log;
    if (!/^bld_[A-Za-z0-9_-]+$/.test(buildId)) return undefined;
    let text: string;
    try {
      text = await fs.promises.readFile(this.fileOf(buildId), "utf8");
    } catch {
      return undefined;
    }
    try {
      return BuildLog.fromSaved(JSON.parse(text) as SavedLog, this.o.maxBytes);
    } catch (err) {
      this.o.log({ err, build_id: buildId }, "template build log unreadable");
      return undefined;
    }
  }

  /** The template is deleted: its builds' logs go, from memory and disk. */
  async dropTemplate(templateId: string, buildIds: string[]): Promise<void> {
    for (const [id, h] of this.held) {
      if (h.templateId !== templateId) continue;
      clearTimeout(h.timer);
      this.held.delete(id);
      buildIds.push(id);
    }
    for (const id of new Set(buildIds)) await fs.promises.rm(this.fileOf(id), { force: true });
  }

  /** Removes log files of builds without a record; `atStart`: leftovers of an interrupted save too. */
  async sweep(atStart = false): Promise<void> {
    this.lastSweep = Date.now();
    let names: string[];
    try {
      names = await fs.promises.readdir(this.o.dir);
    } catch {
      return;
    }
    for (const name of names) {
      const id = name.endsWith(".json") ? name.slice(0, -5) : undefined;
      // A save in progress (another build ending now) is left alone but at start.
      if (id === undefined && !atStart) continue;
      if (id !== undefined && (this.held.has(id) || (await this.o.exists(id).catch(() => true)))) continue;
      await fs.promises.rm(path.join(this.o.dir, name), { force: true }).catch(() => {});
    }
  }
}
