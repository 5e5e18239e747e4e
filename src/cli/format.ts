// How the CLI prints: aligned tables for people, one JSON document with --json, progress bars on
// a terminal's stderr.

/** Prints rows as an aligned table with a header line. */
export function table(headers: string[], rows: Array<Array<string | number | null | undefined>>): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? "-" : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return `${[line(headers), ...cells.map(line)].join("\n")}\n`;
}

export const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

const units = ["B", "KB", "MB", "GB", "TB"];
export function bytes(n: number): string {
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

/** A progress bar on stderr, redrawn at most ten times a second; silent when stderr is not a terminal. */
export class Progress {
  private done = 0;
  private last = 0;
  private readonly started = Date.now();
  private readonly enabled: boolean;

  constructor(
    private readonly label: string,
    private readonly total: number | undefined,
    stream: NodeJS.WriteStream = process.stderr,
    private readonly out = stream,
  ) {
    this.enabled = stream.isTTY === true;
  }

  add(n: number): void {
    this.done += n;
    const now = Date.now();
    if (this.enabled && now - this.last >= 100) {
      this.last = now;
      this.draw();
    }
  }

  finish(): void {
    if (!this.enabled) return;
    this.draw();
    this.out.write("\n");
  }

  private draw(): void {
    const secs = Math.max(0.001, (Date.now() - this.started) / 1000);
    const rate = `${bytes(this.done / secs)}/s`;
    if (!this.total) {
      this.out.write(`\r${this.label} ${bytes(this.done)} ${rate}   `);
      return;
    }
    const frac = Math.min(1, this.done / this.total);
    const width = 30;
    const bar = "#".repeat(Math.round(frac * width)).padEnd(width, ".");
    this.out.write(`\r${this.label} [${bar}] ${(frac * 100).toFixed(0).padStart(3)}% ${bytes(this.done)}/${bytes(this.total)} ${rate}   `);
  }
}
