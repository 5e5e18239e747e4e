// Sandbox records in PostgreSQL (the twin of sandboxes.ts), shared by every node: each record names
// its owner node, and a node re-adopts or ends only its own running sandboxes when it starts.
import { inTransaction, migratePg, type PgMigration, type PgPool } from "../../store/pg.js";
import {
  type EndedStatus,
  type ListFilter,
  SANDBOX_COLUMNS,
  type SandboxRecord,
  type SandboxRow,
  type SandboxStore,
  sandboxValues,
  toListedRecord,
  toSandboxRecord,
} from "./sandboxes.js";

export const PG_SANDBOX_MIGRATIONS: PgMigration[] = [
  {
    area: "sandboxes",
    version: 1,
    sql: `CREATE TABLE sandboxes (
       id TEXT COLLATE "C" PRIMARY KEY,
       tenant_id TEXT COLLATE "C" NOT NULL,
       template TEXT COLLATE "C" NOT NULL,
       status TEXT COLLATE "C" NOT NULL,
       metadata TEXT COLLATE "C" NOT NULL,
       env_vars TEXT COLLATE "C" NOT NULL,
       cpu_count DOUBLE PRECISION NOT NULL,
       memory_mb INTEGER NOT NULL,
       host_uid INTEGER NOT NULL,
       started_at TEXT COLLATE "C" NOT NULL,
       timeout_at TEXT COLLATE "C" NOT NULL,
       ended_at TEXT COLLATE "C",
       node_id TEXT COLLATE "C" NOT NULL
     );
     CREATE INDEX sandboxes_tenant ON sandboxes (tenant_id, started_at);
     CREATE INDEX sandboxes_running ON sandboxes (node_id) WHERE status = 'running';`,
  },
  {
    area: "sandboxes",
    version: 2,
    // Set while a running sandbox is paused (see SandboxStore.setPaused).
    sql: "ALTER TABLE sandboxes ADD COLUMN paused BOOLEAN NOT NULL DEFAULT false",
  },
  {
    area: "sandboxes",
    version: 3,
    // A tenant's running sandboxes, counted at every create in a cluster (its max_sandboxes).
    sql: "CREATE INDEX sandboxes_tenant_running ON sandboxes (tenant_id) WHERE status = 'running'",
  },
];

const INSERT = `INSERT INTO sandboxes (${SANDBOX_COLUMNS}) VALUES (${SANDBOX_COLUMNS.split(",")
  .map((_, i) => `$${i + 1}`)
  .join(", ")})`;
const COUNT_RUNNING_TENANT = "SELECT COUNT(*) AS n FROM sandboxes WHERE status = 'running' AND tenant_id = $1";
/** The advisory lock of one tenant's sandbox count (hashtext: a 32-bit key from the id). */
const TENANT_LOCK = "SELECT pg_advisory_xact_lock(hashtext($1))";

export class PgSandboxStore implements SandboxStore {
  private constructor(
    private readonly pool: PgPool,
    private readonly nodeId: string,
  ) {}

  /** The store of node `nodeId`, its table migrated. */
  static async open(pool: PgPool, nodeId: string): Promise<PgSandboxStore> {
    await migratePg(pool, PG_SANDBOX_MIGRATIONS);
    return new PgSandboxStore(pool, nodeId);
  }

  async insert(r: SandboxRecord): Promise<void> {
    await this.pool.query(INSERT, sandboxValues(r));
  }

  async insertWithin(r: SandboxRecord, max: number): Promise<boolean> {
    // Creates of one tenant on every node take turns on its lock; the count, a statement after the
    // lock (its own snapshot), sees every insert and end committed before.
    return inTransaction(this.pool, async (c) => {
      await c.query(TENANT_LOCK, [`sandboxes:${r.tenantId}`]);
      const { rows } = await c.query<{ n: number }>(COUNT_RUNNING_TENANT, [r.tenantId]);
      if ((rows[0]?.n ?? 0) >= max) return false;
      await c.query(INSERT, sandboxValues(r));
      return true;
    });
  }

  async get(id: string): Promise<SandboxRecord | undefined> {
    const { rows } = await this.pool.query<SandboxRow>("SELECT * FROM sandboxes WHERE id = $1", [id]);
    return rows[0] && toSandboxRecord(rows[0]);
  }

  async listByTenant(tenantId: string, limit: number, offset: number, filter: ListFilter = {}) {
    const params: unknown[] = [tenantId];
    const where = ["tenant_id = $1"];
    if (filter.status !== undefined) {
      params.push(filter.status);
      where.push(`status = $${params.length}`);
    }
    for (const [key, value] of filter.metadata ?? []) {
      params.push(key, value);
      const k = `$${params.length - 1}`;
      // Strings as they are, numbers and booleans as JSON writes them; objects, arrays and null never match.
      where.push(
        `(CASE WHEN jsonb_typeof(metadata::jsonb -> ${k}::text) IN ('string', 'number', 'boolean') THEN metadata::jsonb ->> ${k}::text END) = $${params.length}`,
      );
    }
    const cond = where.join(" AND ");
    const [page, count] = await Promise.all([
      this.pool.query<SandboxRow>(
        `SELECT * FROM sandboxes WHERE ${cond} ORDER BY started_at DESC, id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, limit, offset],
      ),
      this.pool.query<{ n: number }>(`SELECT COUNT(*) AS n FROM sandboxes WHERE ${cond}`, params),
    ]);
    return { sandboxes: page.rows.map(toListedRecord), total: count.rows[0]?.n ?? 0 };
  }

  async listRunning(): Promise<SandboxRecord[]> {
    const { rows } = await this.pool.query<SandboxRow>("SELECT * FROM sandboxes WHERE status = 'running' AND node_id = $1", [this.nodeId]);
    return rows.map(toSandboxRecord);
  }

  async countRunning(tenantId?: string): Promise<number> {
    const { rows } =
      tenantId === undefined
        ? await this.pool.query<{ n: number }>("SELECT COUNT(*) AS n FROM sandboxes WHERE status = 'running'")
        : await this.pool.query<{ n: number }>(COUNT_RUNNING_TENANT, [tenantId]);
    return rows[0]?.n ?? 0;
  }

  async setTimeout(id: string, timeoutAt: string): Promise<void> {
    await this.pool.query("UPDATE sandboxes SET timeout_at = $1 WHERE id = $2 AND status = 'running'", [timeoutAt, id]);
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    await this.pool.query("UPDATE sandboxes SET paused = $1 WHERE id = $2 AND status = 'running'", [paused, id]);
  }

  async end(id: string, status: EndedStatus, endedAt: string): Promise<void> {
    await this.pool.query("UPDATE sandboxes SET status = $1, ended_at = $2 WHERE id = $3 AND status = 'running'", [status, endedAt, id]);
  }

  async takeOver(id: string, from: string, hostUid: number): Promise<boolean> {
    const res = await this.pool.query(
      "UPDATE sandboxes SET node_id = $1, host_uid = $2 WHERE id = $3 AND node_id = $4 AND status = 'running'",
      [this.nodeId, hostUid, id, from],
    );
    return res.rowCount === 1;
  }
}
