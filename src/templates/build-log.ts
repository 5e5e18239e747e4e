// A build's log: its latest lines within a byte budget (the earlier ones dropped and counted, so a
// reader is told how much is missing) and whoever follows it as it is written (the SSE logs route),
// told when the build has ended. An ended log is saved as JSON (saved()/fromSaved()) so the route
// can serve it after the memory copy is freed.
const MAX_LINE = 4000;
/** What a line costs beyond its text (its object, its time stamp): counted so tiny lines cannot pile up. */
const LINE_OVERHEAD = 64;

export interface LogLine {
  /** 0-based position in the whole log (lines cut from the front keep their numbers); -1: the note on dropped lines. */
  n: number;
  at: string;
  line: string;
}

type Follower = { line(l: LogLine): void; end(): void };

export interface SavedLog {
  droppedLines: number;
  droppedBytes: number;
  lines: LogLine[];
}

const costOf = (l: LogLine) => l.line.length + LINE_OVERHEAD;

export class BuildLog {
  private lines: LogLine[] = [];
  /** Index of the first kept line in `lines` (dropped ones are cut off in batches, not one by one). */
  private head = 0;
  private next = 0;
  private readonly followers = new Set<Follower>();
  /** What the kept lines cost. */
  bytes = 0;
  droppedLines = 0;
  droppedBytes = 0;
  closed = false;

  constructor(private readonly maxBytes: number) {}

  /** An ended log as it was saved. */
  static fromSaved(saved: SavedLog, maxBytes: number): BuildLog {
    const log = new BuildLog(maxBytes);
    for (const l of saved.lines) log.keep(l);
    log.droppedLines += saved.droppedLines;
    log.droppedBytes += saved.droppedBytes;
    log.next = (saved.lines.at(-1)?.n ?? -1) + 1;
    log.closed = true;
    return log;
  }

  add(line: string): void {
    if (this.closed) return;
    const entry = { n: this.next++, at: new Date().toISOString(), line: line.slice(0, MAX_LINE) };
    this.keep(entry);
    for (const f of this.followers) f.line(entry);
  }

  private keep(entry: LogLine): void {
    this.lines.push(entry);
    this.bytes += costOf(entry);
    while (this.bytes > this.maxBytes && this.head < this.lines.length - 1) {
      const gone = this.lines[this.head++] as LogLine;
      this.bytes -= costOf(gone);
      this.droppedLines += 1;
      this.droppedBytes += Buffer.byteLength(gone.line);
    }
    if (this.head > 1024 && this.head * 2 > this.lines.length) {
      this.lines = this.lines.slice(this.head);
      this.head = 0;
    }
  }

  close(): void {
    this.closed = true;
    for (const f of this.followers) f.end();
    this.followers.clear();
  }

  /** Lines kept now, oldest first. */
  private kept(): LogLine[] {
    return this.lines.slice(this.head);
  }

  /** What follow() sends first when lines were dropped: how many, and why. */
  private note(): LogLine | undefined {
    if (this.droppedLines === 0) return undefined;
    const at = this.lines[this.head]?.at ?? new Date().toISOString();
    return {
      n: -1,
      at,
      line: `[${this.droppedLines} earlier line(s), ${this.droppedBytes} bytes, not kept: a build's log keeps its last ${Math.round(this.maxBytes / 1024)} KiB (AGENTBOX_TEMPLATE_LOG_KB)]`,
    };
  }

  /** The lines kept (after the note on dropped ones), then each new one, then end() (at once when the build has ended); returns the unfollow. */
  follow(f: Follower): () => void {
    const note = this.note();
    if (note) f.line(note);
    for (const l of this.kept()) f.line(l);
    if (this.closed) {
      f.end();
      return () => {};
    }
    this.followers.add(f);
    return () => this.followers.delete(f);
  }

  text(): string[] {
    return this.kept().map((l) => l.line);
  }

  saved(): SavedLog {
    return { droppedLines: this.droppedLines, droppedBytes: this.droppedBytes, lines: this.kept() };
  }
}
