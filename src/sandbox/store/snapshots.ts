// Snapshot records: which tenant owns a snapshot of which sandbox's /home/user, its archive's size
// and SHA-256, and the sandbox's settings at the time (restored with the files). The archive itself
// is a file in the snapshot directory (src/sandbox/snapshots.ts); a row exists only once its file
// is complete and verified.
import { type Db, type Migration, migrate } from "../../store/db.js";

/** Why a snapshot was taken: asked for, at the sandbox's timeout (on_timeout: snapshot), or after a pause that lasted too long. */
export type SnapshotKind = "manual" | "timeout" | "hibernate";

export interface SnapshotSettings {
  template: string;
  envVars: Record<string, string>;
  metadata: Record<string, unknown>;
  /** Anything else the sandbox was created with that a copy should get again (e.g. its network policy). */
  extra?: Record<string, unknown>;
}

export interface SnapshotRecord {
  id: string;
  tenantId: string;
  sandboxId: string;
  kind: SnapshotKind;
  createdAt: string;
  sizeBytes: number;
  files: number;
  sha256: string;
  settings: SnapshotSettings;
}

export interface SnapshotStore {
  insert(r: SnapshotRecord): Promise<void>;
  get(id: string): Promise<SnapshotRecord | undefined>;
  listByTenant(tenantId: string, limit: number, offset: number): Promise<{ snapshots: SnapshotRecord[]; total: number }>;
  countByTenant(tenantId: string): Promise<number>;
  /** Bytes of all the tenant's snapshot archives (every kind: they all take disk). */
  bytesByTenant(tenantId: string): Promise<number>;
  /** Bytes of every tenant's snapshot archives (tenants with none are absent). */
  bytesPerTenant(): Promise<Map<string, number>>;
  /** The snapshot a sandbox was hibernated into (paused too long), if any. */
  hibernated(sandboxId: string): Promise<SnapshotRecord | undefined>;
  /** Removes the record; true if it was there. */
  delete(id: string): Promise<boolean>;
  /** A sandbox's on_timeout when it is not the default (kept so a restart of the service keeps it); null: forget it. */
  setOnTimeout(sandboxId: string, onTimeout: string | null): Promise<void>;
  onTimeout(sandboxId: string): Promise<string | undefined>;
}

export interface SnapshotRow {
  id: string;
  tenant_id: string;
  sandbox_id: string;
  kind: SnapshotKind;
  created_at: string;
  size_bytes: number;
  files: number;
  sha256: string;
  settings: string;
}

export const toSnapshotRecord = (r: SnapshotRow): SnapshotRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  sandboxId: r.sandbox_id,
  kind: r.kind,
  createdAt: r.created_at,
  sizeBytes: r.size_bytes,
  files: r.files,
  sha256: r.sha256,
  settings: JSON.parse(r.settings),
});

export const SNAPSHOT_MIGRATIONS: Migration[] = [
  {
    area: "snapshots",
    version: 1,
    // IF NOT EXISTS: databases from before versioned areas already have these tables.
    up: (db) =>
      db.exec(
        `CREATE TABLE IF NOT EXISTS snapshots (
         id TEXT PRIMARY KEY,
         tenant_id TEXT NOT NULL,
         sandbox_id TEXT NOT NULL,
         kind TEXT NOT NULL,
         created_at TEXT NOT NULL,
         size_bytes INTEGER NOT NULL,
         files INTEGER NOT NULL,
         sha256 TEXT NOT NULL,
         settings TEXT NOT NULL
       );
       CREATE INDEX IF NOT EXISTS snapshots_tenant ON snapshots (tenant_id, created_at);
       CREATE INDEX IF NOT EXISTS snapshots_sandbox ON snapshots (sandbox_id, kind);
       CREATE TABLE IF NOT EXISTS sandbox_on_timeout (sandbox_id TEXT PRIMARY KEY, on_timeout TEXT NOT NULL);`,
      ),
  },
];

export class SqliteSnapshotStore implements SnapshotStore {
  private readonly stmts;

  constructor(db: Db) {
    migrate(db, SNAPSHOT_MIGRATIONS);
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO snapshots (id, tenant_id, sandbox_id, kind, created_at, size_bytes, files, sha256, settings)
         VALUES (@id, @tenant_id, @sandbox_id, @kind, @created_at, @size_bytes, @files, @sha256, @settings)`,
      ),
      get: db.prepare<[string], SnapshotRow>("SELECT * FROM snapshots WHERE id = ?"),
      page: db.prepare<[string, number, number], SnapshotRow>(
        "SELECT * FROM snapshots WHERE tenant_id = ? ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
      ),
      count: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM snapshots WHERE tenant_id = ?"),
      bytes: db.prepare<[string], { n: number | null }>("SELECT SUM(size_bytes) AS n FROM snapshots WHERE tenant_id = ?"),
      bytesPerTenant: db.prepare<[], { tenant_id: string; n: number }>(
        "SELECT tenant_id, SUM(size_bytes) AS n FROM snapshots GROUP BY tenant_id",
      ),
      hibernated: db.prepare<[string], SnapshotRow>(
        "SELECT * FROM snapshots WHERE sandbox_id = ? AND kind = 'hibernate' ORDER BY created_at DESC LIMIT 1",
      ),
      delete: db.prepare("DELETE FROM snapshots WHERE id = ?"),
      setOnTimeout: db.prepare("INSERT OR REPLACE INTO sandbox_on_timeout (sandbox_id, on_timeout) VALUES (?, ?)"),
      forgetOnTimeout: db.prepare("DELETE FROM sandbox_on_timeout WHERE sandbox_id = ?"),
      onTimeout: db.prepare<[string], { on_timeout: string }>("SELECT on_timeout FROM sandbox_on_timeout WHERE sandbox_id = ?"),
    };
  }

  async insert(r: SnapshotRecord): Promise<void> {
    this.stmts.insert.run({
      id: r.id,
      tenant_id: r.tenantId,
      sandbox_id: r.sandboxId,
      kind: r.kind,
      created_at: r.createdAt,
      size_bytes: r.sizeBytes,
      files: r.files,
      sha256: r.sha256,
      settings: JSON.stringify(r.settings),
    });
  }

  async get(id: string): Promise<SnapshotRecord | undefined> {
    const row = this.stmts.get.get(id);
    return row ? toSnapshotRecord(row) : undefined;
  }

  async listByTenant(tenantId: string, limit: number, offset: number) {
    return {
      snapshots: this.stmts.page.all(tenantId, limit, offset).map(toSnapshotRecord),
      total: this.stmts.count.get(tenantId)?.n ?? 0,
    };
  }

  async countByTenant(tenantId: string): Promise<number> {
    return this.stmts.count.get(tenantId)?.n ?? 0;
  }

  async bytesByTenant(tenantId: string): Promise<number> {
    return this.stmts.bytes.get(tenantId)?.n ?? 0;
  }

  async bytesPerTenant(): Promise<Map<string, number>> {
    return new Map(this.stmts.bytesPerTenant.all().map((r) => [r.tenant_id, r.n]));
  }

  async hibernated(sandboxId: string): Promise<SnapshotRecord | undefined> {
    const row = this.stmts.hibernated.get(sandboxId);
    return row ? toSnapshotRecord(row) : undefined;
  }

  async delete(id: string): Promise<boolean> {
    return this.stmts.delete.run(id).changes > 0;
  }

  async setOnTimeout(sandboxId: string, onTimeout: string | null): Promise<void> {
    if (onTimeout === null) this.stmts.forgetOnTimeout.run(sandboxId);
    else this.stmts.setOnTimeout.run(sandboxId, onTimeout);
  }

  async onTimeout(sandboxId: string): Promise<string | undefined> {
    return this.stmts.onTimeout.get(sandboxId)?.on_timeout;
  }
}
