// Token usage per API key, in the `usage` table. Rows are queued and written together every
// FLUSH_MS in one batch (UsageLog), so recording costs a completion next to nothing; a read (or
// close) writes what is queued first, so a client always sees its own finished requests. A crash
// loses at most the last FLUSH_MS of rows.
import type { Db } from "../store/db.js";
import { tokenCount } from "./upstream-answer.js";

const FLUSH_MS = 25;

export interface UsageRow {
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  requests: number;
}

/** One finished request's tokens. */
export interface UsageEntry {
  keyId: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** ISO-8601. */
  at: string;
}

export interface UsageStore {
  /** Writes a batch of entries, all or none. */
  insertMany(entries: UsageEntry[]): Promise<void>;
  /** Totals per model for one key since an ISO time ("" for all time), by model name. */
  summary(keyId: string, since: string): Promise<UsageRow[]>;
}

/** The `usage` table belongs to the core migrations (src/store/db.ts). */
export class SqliteUsageStore implements UsageStore {
  private readonly writeAll: (entries: UsageEntry[]) => void;
  private readonly summaryStmt;

  constructor(private readonly db: Db) {
    const insert = db.prepare<[string, string, number, number, string]>(
      "INSERT INTO usage (key_id, model, prompt_tokens, completion_tokens, created_at) VALUES (?, ?, ?, ?, ?)",
    );
    this.summaryStmt = db.prepare<[string, string], UsageRow>(
      `SELECT model, SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens, COUNT(*) AS requests
         FROM usage WHERE key_id = ? AND created_at >= ? GROUP BY model ORDER BY model`,
    );
    this.writeAll = db.transaction((entries: UsageEntry[]) => {
      for (const e of entries) insert.run(e.keyId, e.model, e.promptTokens, e.completionTokens, e.at);
    });
  }

  async insertMany(entries: UsageEntry[]): Promise<void> {
    // A closed database (the service shutting down) drops the last batch rather than throwing.
    if (entries.length === 0 || !this.db.open) return;
    this.writeAll(entries);
  }

  async summary(keyId: string, since: string): Promise<UsageRow[]> {
    return this.summaryStmt.all(keyId, since);
  }
}

/** The queue in front of a UsageStore. */
export class UsageLog {
  private queue: UsageEntry[] = [];
  private scheduled = false;

  constructor(
    private readonly store: UsageStore,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  record(keyId: string, model: string, promptTokens: number, completionTokens: number): void {
    // Counts an upstream reported: a bad one (a string, an object) would fail the whole batch's insert.
    const at = new Date().toISOString();
    this.queue.push({ keyId, model, promptTokens: tokenCount(promptTokens), completionTokens: tokenCount(completionTokens), at });
    if (!this.scheduled) {
      this.scheduled = true;
      setTimeout(() => this.flush().catch(this.onError), FLUSH_MS).unref();
    }
  }

  /** Writes what is queued now. */
  async flush(): Promise<void> {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const rows = this.queue;
    this.queue = [];
    await this.store.insertMany(rows);
  }

  /** Totals per model for one key, since an ISO time (default: all time). */
  async forKey(keyId: string, since = ""): Promise<{ usage: UsageRow[]; total_tokens: number }> {
    await this.flush();
    const usage = await this.store.summary(keyId, since);
    const total = usage.reduce((n, r) => n + r.prompt_tokens + r.completion_tokens, 0);
    return { usage, total_tokens: total };
  }
}
