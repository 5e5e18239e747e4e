// Stored file records in PostgreSQL (the twin of store.ts): the same rows, so any node can list and
// serve a tenant's files (their bytes are in the storage backend, S3 when several nodes share them).
import { migratePg, type PgMigration, type PgPool } from "../store/pg.js";
import { type FileListQuery, type FileRecord, type FileRow, type FileStore, toFileRecord } from "./store.js";

export const PG_FILE_MIGRATIONS: PgMigration[] = [
  {
    area: "files",
    version: 1,
    sql: `CREATE TABLE stored_files (
       seq BIGSERIAL PRIMARY KEY,
       id TEXT COLLATE "C" NOT NULL UNIQUE,
       tenant_id TEXT COLLATE "C" NOT NULL,
       filename TEXT COLLATE "C" NOT NULL,
       purpose TEXT COLLATE "C" NOT NULL,
       bytes BIGINT NOT NULL,
       sha256 TEXT COLLATE "C" NOT NULL,
       storage_key TEXT COLLATE "C" NOT NULL,
       created_at BIGINT NOT NULL,
       expires_at BIGINT
     );
     CREATE INDEX stored_files_tenant ON stored_files (tenant_id, seq);
     CREATE INDEX stored_files_expiry ON stored_files (expires_at) WHERE expires_at IS NOT NULL;
     CREATE INDEX stored_files_key ON stored_files (storage_key);`,
  },
];

/** Live: not expired at $2 (every query below has the time as its second parameter). */
const LIVE = "(expires_at IS NULL OR expires_at > $2)";

export class PgFileStore implements FileStore {
  private constructor(private readonly pool: PgPool) {}

  static async open(pool: PgPool): Promise<PgFileStore> {
    await migratePg(pool, PG_FILE_MIGRATIONS);
    return new PgFileStore(pool);
  }

  async insert(f: FileRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO stored_files (id, tenant_id, filename, purpose, bytes, sha256, storage_key, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [f.id, f.tenantId, f.filename, f.purpose, f.bytes, f.sha256, f.storageKey, f.createdAt, f.expiresAt],
    );
  }

  async get(tenantId: string, id: string, now = Date.now()): Promise<FileRecord | undefined> {
    const { rows } = await this.pool.query<FileRow>(`SELECT * FROM stored_files WHERE tenant_id = $1 AND ${LIVE} AND id = $3`, [
      tenantId,
      now,
      id,
    ]);
    return rows[0] && toFileRecord(rows[0]);
  }

  async list(tenantId: string, q: FileListQuery, now = Date.now()): Promise<{ files: FileRecord[]; hasMore: boolean }> {
    const params: unknown[] = [tenantId, now];
    let where = `tenant_id = $1 AND ${LIVE}`;
    if (q.purpose !== undefined) {
      params.push(q.purpose);
      where += ` AND purpose = $${params.length}`;
    }
    if (q.after !== undefined) {
      params.push(q.after);
      // An unknown cursor gives an empty page rather than starting over.
      const edge = q.order === "asc" ? "9223372036854775807" : "-1";
      where += ` AND seq ${q.order === "asc" ? ">" : "<"} COALESCE((SELECT seq FROM stored_files WHERE id = $${params.length} AND tenant_id = $1), ${edge})`;
    }
    params.push(q.limit + 1);
    const { rows } = await this.pool.query<FileRow>(
      `SELECT * FROM stored_files WHERE ${where} ORDER BY seq ${q.order === "asc" ? "ASC" : "DESC"} LIMIT $${params.length}`,
      params,
    );
    return { files: rows.slice(0, q.limit).map(toFileRecord), hasMore: rows.length > q.limit };
  }

  async delete(id: string): Promise<boolean> {
    return ((await this.pool.query("DELETE FROM stored_files WHERE id = $1", [id])).rowCount ?? 0) > 0;
  }

  async usage(tenantId: string): Promise<{ bytes: number; files: number }> {
    const { rows } = await this.pool.query<{ bytes: number | null; files: number }>(
      "SELECT SUM(bytes) AS bytes, COUNT(*) AS files FROM stored_files WHERE tenant_id = $1",
      [tenantId],
    );
    return { bytes: rows[0]?.bytes ?? 0, files: rows[0]?.files ?? 0 };
  }

  async bytesPerTenant(): Promise<Map<string, number>> {
    const { rows } = await this.pool.query<{ tenant_id: string; bytes: number }>(
      "SELECT tenant_id, SUM(bytes) AS bytes FROM stored_files GROUP BY tenant_id",
    );
    return new Map(rows.map((r) => [r.tenant_id, r.bytes]));
  }

  async expired(now: number, limit: number): Promise<FileRecord[]> {
    const { rows } = await this.pool.query<FileRow>(
      "SELECT * FROM stored_files WHERE expires_at IS NOT NULL AND expires_at <= $1 ORDER BY expires_at LIMIT $2",
      [now, limit],
    );
    return rows.map(toFileRecord);
  }

  async hasKey(storageKey: string): Promise<boolean> {
    return (await this.pool.query("SELECT 1 FROM stored_files WHERE storage_key = $1 LIMIT 1", [storageKey])).rows.length > 0;
  }
}
