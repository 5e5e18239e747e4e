// Token usage per API key in PostgreSQL (the twin of SqliteUsageStore in usage.ts): one statement
// per batch the UsageLog writes.
import { migratePg, type PgMigration, type PgPool } from "../store/pg.js";
import type { UsageEntry, UsageRow, UsageStore } from "./usage.js";

export const PG_USAGE_MIGRATIONS: PgMigration[] = [
  {
    area: "usage",
    version: 1,
    sql: `CREATE TABLE usage (
       key_id TEXT COLLATE "C" NOT NULL,
       model TEXT COLLATE "C" NOT NULL,
       prompt_tokens INTEGER NOT NULL,
       completion_tokens INTEGER NOT NULL,
       created_at TEXT COLLATE "C" NOT NULL
     );
     CREATE INDEX usage_key ON usage (key_id, created_at);`,
  },
];

export class PgUsageStore implements UsageStore {
  private constructor(private readonly pool: PgPool) {}

  static async open(pool: PgPool): Promise<PgUsageStore> {
    await migratePg(pool, PG_USAGE_MIGRATIONS);
    return new PgUsageStore(pool);
  }

  async insertMany(entries: UsageEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.pool.query(
      `INSERT INTO usage (key_id, model, prompt_tokens, completion_tokens, created_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[])`,
      [
        entries.map((e) => e.keyId),
        entries.map((e) => e.model),
        entries.map((e) => e.promptTokens),
        entries.map((e) => e.completionTokens),
        entries.map((e) => e.at),
      ],
    );
  }

  async summary(keyId: string, since: string): Promise<UsageRow[]> {
    const { rows } = await this.pool.query<UsageRow>(
      `SELECT model, SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens, COUNT(*) AS requests
         FROM usage WHERE key_id = $1 AND created_at >= $2 GROUP BY model ORDER BY model`,
      [keyId, since],
    );
    return rows;
  }
}
