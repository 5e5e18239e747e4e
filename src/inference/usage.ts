// Token usage per API key, in the `usage` table. Rows are queued and written together every
// FLUSH_MS in one transaction, so recording costs a completion next to nothing; a read (or close)
// writes what is queued first, so a client always sees its own finished requests. A crash loses at
// most the last FLUSH_MS of rows.
import type { Database, Statement } from "better-sqlite3";

const FLUSH_MS = 25;

export interface UsageRow {
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  requests: number;
}

export class UsageLog {
  private readonly insert: Statement<[string, string, number, number, string]>;
  private readonly summary: Statement<[string, string], UsageRow>;
  private queue: Array<[string, string, number, number, string]> = [];
  private scheduled = false;
  private readonly writeAll: (rows: Array<[string, string, number, number, string]>) => void;

  constructor(private readonly db: Database) {
    this.insert = db.prepare("INSERT INTO usage (key_id, model, prompt_tokens, completion_tokens, created_at) VALUES (?, ?, ?, ?, ?)");
    this.summary = db.prepare(
      `SELECT model, SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens, COUNT(*) AS requests
         FROM usage WHERE key_id = ? AND created_at >= ? GROUP BY model ORDER BY model`,
    );
    this.writeAll = db.transaction((rows: Array<[string, string, number, number, string]>) => {
      for (const row of rows) this.insert.run(...row);
    });
  }

  record(keyId: string, model: string, promptTokens: number, completionTokens: number): void {
    this.queue.push([keyId, model, promptTokens, completionTokens, new Date().toISOString()]);
    if (!this.scheduled) {
      this.scheduled = true;
      setTimeout(() => this.flush(), FLUSH_MS).unref();
    }
  }

  flush(): void {
    this.scheduled = false;
    if (this.queue.length === 0 || !this.db.open) return;
    const rows = this.queue;
    this.queue = [];
    this.writeAll(rows);
  }

  /** Totals per model for one key, since an ISO time (default: all time). */
  forKey(keyId: string, since = ""): { usage: UsageRow[]; total_tokens: number } {
    this.flush();
    const usage = this.summary.all(keyId, since);
    const total = usage.reduce((n, r) => n + r.prompt_tokens + r.completion_tokens, 0);
    return { usage, total_tokens: total };
  }
}
