// A build's log while the service runs: its lines so far (the latest MAX_LINES) and whoever follows
// it as it is written (the SSE logs route), told when the build has ended.
const MAX_LINES = 5000;
const MAX_LINE = 4000;

export interface LogLine {
  /** 0-based position in the whole log (lines cut from the front keep their numbers). */
  n: number;
  at: string;
  line: string;
}

type Follower = { line(l: LogLine): void; end(): void };

export class BuildLog {
  private readonly lines: LogLine[] = [];
  private next = 0;
  private readonly followers = new Set<Follower>();
  closed = false;

  add(line: string): void {
    const entry = { n: this.next++, at: new Date().toISOString(), line: line.slice(0, MAX_LINE) };
    this.lines.push(entry);
    if (this.lines.length > MAX_LINES) this.lines.shift();
    for (const f of this.followers) f.line(entry);
  }

  close(): void {
    this.closed = true;
    for (const f of this.followers) f.end();
    this.followers.clear();
  }

  /** The lines so far, then each new one, then end() (at once when the build has ended); returns the unfollow. */
  follow(f: Follower): () => void {
    for (const l of this.lines) f.line(l);
    if (this.closed) {
      f.end();
      return () => {};
    }
    this.followers.add(f);
    return () => this.followers.delete(f);
  }

  text(): string[] {
    return this.lines.map((l) => l.line);
  }
}
