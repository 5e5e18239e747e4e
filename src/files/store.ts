// Stored file records (/v1/files): one row per committed file object, written only after its bytes
// are safely in storage. Expired rows are invisible to every read; the reaper deletes them.
import { type Db, type Migration, migrate } from "../store/db.js";

export interface FileRecord {
  id: string;
  tenantId: string;
  filename: string;
  purpose: string;
  bytes: number;
  sha256: string;
  /** Where the storage backend keeps the bytes. */
  storageKey: string;
  /** Unix ms. */
  createdAt: number;
  /** Unix ms; null: never expires. */
  expiresAt: number | null;
}

export interface FileRow {
  seq: number;
  id: string;
  tenant_id: string;
  filename: string;
  purpose: string;
  bytes: number;
  sha256: string;
  storage_key: string;
  created_at: number;
  expires_at: number | null;
}

export const toFileRecord = (r: FileRow): FileRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  filename: r.filename,
  purpose: r.purpose,
  bytes: r.bytes,
  sha256: r.sha256,
  storageKey: r.storage_key,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

export interface FileListQuery {
  limit: number;
  /** Cursor: the id of the last file of the previous page. */
  after?: string;
  order: "asc" | "desc";
  purpose?: string;
}

/**
 * The stored files' records. Promise-returning so that another database can stand behind it; the
 * storage quota (src/files/quota.ts) keeps its own count of committed bytes, loaded from
 * bytesPerTenant() at start, so no reservation waits on it.
 */
export interface FileStore {
  insert(f: FileRecord): Promise<void>;
  /** The tenant's live file, or undefined (another tenant's file, an expired one and a missing one look the same). */
  get(tenantId: string, id: string, now?: number): Promise<FileRecord | undefined>;
  /** One page of the tenant's live files (by upload order, the cursor exclusive), and whether more follow. */
  list(tenantId: string, q: FileListQuery, now?: number): Promise<{ files: FileRecord[]; hasMore: boolean }>;
  /** Removes the row; true if it was there. */
  delete(id: string): Promise<boolean>;
  /** Bytes and files the tenant holds (expired ones count until they are removed). */
  usage(tenantId: string): Promise<{ bytes: number; files: number }>;
  /** Bytes every tenant holds (tenants with none are absent). */
  bytesPerTenant(): Promise<Map<string, number>>;
  /** Up to `limit` files whose expiry has passed, soonest expired first. */
  expired(now: number, limit: number): Promise<FileRecord[]>;
  /** Whether any row points at this storage key. */
  hasKey(storageKey: string): Promise<boolean>;
}

const LIVE = "(expires_at IS NULL OR expires_at > @now)";

export const FILE_MIGRATIONS: Migration[] = [
  {
    area: "files",
    version: 1,
    // IF NOT EXISTS: databases from before versioned areas already have these tables.
    up: (db) =>
      db.exec(
        `CREATE TABLE IF NOT EXISTS stored_files (
         seq INTEGER PRIMARY KEY AUTOINCREMENT,
         id TEXT NOT NULL UNIQUE,
         tenant_id TEXT NOT NULL,
         filename TEXT NOT NULL,
         purpose TEXT NOT NULL,
         bytes INTEGER NOT NULL,
         sha256 TEXT NOT NULL,
         storage_key TEXT NOT NULL,
         created_at INTEGER NOT NULL,
         expires_at INTEGER
       );
       CREATE INDEX IF NOT EXISTS stored_files_tenant ON stored_files (tenant_id, seq);
       CREATE INDEX IF NOT EXISTS stored_files_expiry ON stored_files (expires_at) WHERE expires_at IS NOT NULL;`,
      ),
  },
];

export class SqliteFileStore implements FileStore {
  constructor(private readonly db: Db) {
    migrate(db, FILE_MIGRATIONS);
  }

  async insert(f: FileRecord): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO stored_files (id, tenant_id, filename, purpose, bytes, sha256, storage_key, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(f.id, f.tenantId, f.filename, f.purpose, f.bytes, f.sha256, f.storageKey, f.createdAt, f.expiresAt);
  }

  /** The tenant's live file, or undefined (another tenant's file, an expired one and a missing one look the same). */
  async get(tenantId: string, id: string, now = Date.now()): Promise<FileRecord | undefined> {
    const row = this.db
      .prepare<{ id: string; tenant: string; now: number }, FileRow>(
        `SELECT * FROM stored_files WHERE id = @id AND tenant_id = @tenant AND ${LIVE}`,
      )
      .get({ id, tenant: tenantId, now });
    return row && toFileRecord(row);
  }

  /** One page of the tenant's live files, and whether more follow. */
  async list(tenantId: string, q: FileListQuery, now = Date.now()): Promise<{ files: FileRecord[]; hasMore: boolean }> {
    const params: Record<string, string | number> = { tenant: tenantId, now, limit: q.limit + 1 };
    let where = `tenant_id = @tenant AND ${LIVE}`;
    if (q.purpose !== undefined) {
      where += " AND purpose = @purpose";
      params.purpose = q.purpose;
    }
    if (q.after !== undefined) {
      // An unknown cursor gives an empty page rather than starting over.
      where += ` AND seq ${q.order === "asc" ? ">" : "<"} COALESCE((SELECT seq FROM stored_files WHERE id = @after AND tenant_id = @tenant), ${q.order === "asc" ? "9e18" : "-1"})`;
      params.after = q.after;
    }
    const rows = this.db
      .prepare<Record<string, string | number>, FileRow>(
        `SELECT * FROM stored_files WHERE ${where} ORDER BY seq ${q.order === "asc" ? "ASC" : "DESC"} LIMIT @limit`,
      )
      .all(params);
    return { files: rows.slice(0, q.limit).map(toFileRecord), hasMore: rows.length > q.limit };
  }

  /** Removes the row; true if it was there. */
  async delete(id: string): Promise<boolean> {
    return this.db.prepare("DELETE FROM stored_files WHERE id = ?").run(id).changes > 0;
  }

  /** Bytes and files the tenant holds (expired files count until the reaper removes them: their bytes are still stored). */
  async usage(tenantId: string): Promise<{ bytes: number; files: number }> {
    const row = this.db
      .prepare<[string], { bytes: number | null; files: number }>(
        "SELECT SUM(bytes) AS bytes, COUNT(*) AS files FROM stored_files WHERE tenant_id = ?",
      )
      .get(tenantId);
    return { bytes: row?.bytes ?? 0, files: row?.files ?? 0 };
  }

  async bytesPerTenant(): Promise<Map<string, number>> {
    const rows = this.db
      .prepare<[], { tenant_id: string; bytes: number }>("SELECT tenant_id, SUM(bytes) AS bytes FROM stored_files GROUP BY tenant_id")
      .all();
    return new Map(rows.map((r) => [r.tenant_id, r.bytes]));
  }

  /** Up to `limit` files whose expiry has passed. */
  async expired(now: number, limit: number): Promise<FileRecord[]> {
    return this.db
      .prepare<[number, number], FileRow>(
        "SELECT * FROM stored_files WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?",
      )
      .all(now, limit)
      .map(toFileRecord);
  }

  /** Whether any row points at this storage key (orphan sweeping at start-up). */
  async hasKey(storageKey: string): Promise<boolean> {
    return this.db.prepare("SELECT 1 FROM stored_files WHERE storage_key = ? LIMIT 1").get(storageKey) !== undefined;
  }
}
