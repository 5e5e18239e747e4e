// Sandbox records: what a sandbox is (owner, template, limits, life span, status), kept so that a
// restart of the service can re-adopt or cleanly end every sandbox.
import type { EndReason } from "../../events/bus.js";
import { type Db, type Migration, migrate } from "../../store/db.js";

export const SANDBOX_STATUSES = ["running", "paused", "terminated", "timed_out", "failed"] as const;
export type SandboxStatus = (typeof SANDBOX_STATUSES)[number];
export type EndedStatus = Exclude<SandboxStatus, "running" | "paused">;

/**
 * The status an ended sandbox shows for a reason: the public clients know `terminated`,
 * `timed_out` and `failed`; the reason itself lives in the sandbox's events.
 */
export function endStatus(reason: EndReason): EndedStatus {
  if (reason === "timed_out") return "timed_out";
  if (reason === "oom" || reason === "error" || reason === "node_lost") return "failed";
  return "terminated";
}

/** What a list is narrowed to: a stored status, and metadata keys that must equal the given strings (AND). */
export interface ListFilter {
  status?: SandboxStatus;
  metadata?: [key: string, value: string][];
}

/** Metadata keys a list may filter on (also what keeps the JSON path below well-formed). */
export const METADATA_FILTER_KEY = /^[A-Za-z0-9_.:-]{1,128}$/;
export const MAX_METADATA_FILTERS = 8;

export interface SandboxRecord {
  id: string;
  tenantId: string;
  template: string;
  status: SandboxStatus;
  metadata: Record<string, unknown>;
  envVars: Record<string, string>;
  cpuCount: number;
  memoryMb: number;
  hostUid: number;
  startedAt: string;
  timeoutAt: string;
  endedAt: string | null;
  /** The node that owns it (AGENTBOX_NODE_ID): the one that runs it, re-adopts it or ends it. */
  nodeId: string;
}

/**
 * Where sandbox records are kept. Promise-returning so that another database can stand behind it;
 * the hot path never reads it (a live sandbox is found in the registry's memory).
 */
export interface SandboxStore {
  insert(record: SandboxRecord): Promise<void>;
  /**
   * Inserts the record only if its tenant then has fewer than `max` running sandboxes on every
   * node together (hibernated ones included: their records say running), the count and the insert
   * one atomic step against every node's inserts; false, and nothing written, when it had `max`.
   */
  insertWithin(record: SandboxRecord, max: number): Promise<boolean>;
  get(id: string): Promise<SandboxRecord | undefined>;
  listByTenant(
    tenantId: string,
    limit: number,
    offset: number,
    filter?: ListFilter,
  ): Promise<{ sandboxes: SandboxRecord[]; total: number }>;
  /** The running sandboxes this node owns (what it re-adopts or ends when it starts). */
  listRunning(): Promise<SandboxRecord[]>;
  /** Running sandboxes of every node (of one tenant, if given). */
  countRunning(tenantId?: string): Promise<number>;
  setTimeout(id: string, timeoutAt: string): Promise<void>;
  /**
   * Marks a running sandbox paused, or running again: only its owner has it in memory, and a list
   * through another node of a cluster must still show it as it is. A list shows such a record as
   * `paused`; a list filtered by `running` still gives both (the caller tells them apart).
   */
  setPaused(id: string, paused: boolean): Promise<void>;
  end(id: string, status: EndedStatus, endedAt: string): Promise<void>;
  /**
   * Takes a running sandbox's record over from node `from` (lost) for this node, with a host uid
   * of this node's: one conditional update, so of several nodes trying at once one gets it. False,
   * and nothing written, when the record is no longer `from`'s or no longer running.
   */
  takeOver(id: string, from: string, hostUid: number): Promise<boolean>;
}

export interface SandboxRow {
  id: string;
  tenant_id: string;
  template: string;
  status: SandboxStatus;
  metadata: string;
  env_vars: string;
  cpu_count: number;
  memory_mb: number;
  host_uid: number;
  started_at: string;
  timeout_at: string;
  ended_at: string | null;
  node_id: string;
  /** Set while a running sandbox is paused (SQLite 0/1, PostgreSQL a boolean). */
  paused: number | boolean;
}

export const toSandboxRecord = (r: SandboxRow): SandboxRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  template: r.template,
  status: r.status,
  metadata: JSON.parse(r.metadata),
  envVars: JSON.parse(r.env_vars),
  cpuCount: r.cpu_count,
  memoryMb: r.memory_mb,
  hostUid: r.host_uid,
  startedAt: r.started_at,
  timeoutAt: r.timeout_at,
  endedAt: r.ended_at,
  nodeId: r.node_id,
});

/** A record as a list shows it: a running one that is paused says so. */
export const toListedRecord = (r: SandboxRow): SandboxRecord => {
  const record = toSandboxRecord(r);
  if (r.status === "running" && r.paused) record.status = "paused";
  return record;
};

/** The sandboxes table is made by the core migrations (src/store/db.ts); these are its later columns. */
export const SANDBOX_MIGRATIONS: Migration[] = [
  {
    area: "sandboxes",
    version: 1,
    // The owner node. Rows from before it belong to the one node that had the file (the store
    // writes its own id into them when it opens).
    up: (db) => db.exec("ALTER TABLE sandboxes ADD COLUMN node_id TEXT"),
  },
  {
    area: "sandboxes",
    version: 2,
    up: (db) => db.exec("ALTER TABLE sandboxes ADD COLUMN paused INTEGER NOT NULL DEFAULT 0"),
  },
];

/** The columns an insert writes, in order (shared with the PostgreSQL store). */
export const sandboxValues = (r: SandboxRecord) => [
  r.id,
  r.tenantId,
  r.template,
  r.status,
  JSON.stringify(r.metadata),
  JSON.stringify(r.envVars),
  r.cpuCount,
  r.memoryMb,
  r.hostUid,
  r.startedAt,
  r.timeoutAt,
  r.endedAt,
  r.nodeId,
];
export const SANDBOX_COLUMNS =
  "id, tenant_id, template, status, metadata, env_vars, cpu_count, memory_mb, host_uid, started_at, timeout_at, ended_at, node_id";

/**
 * A metadata value as the string a query compares it with: strings as they are, numbers and
 * booleans as JSON writes them; objects, arrays and null never match.
 */
const metadataText = (n: number) =>
  `CASE json_type(metadata, @p${n}) WHEN 'text' THEN json_extract(metadata, @p${n}) WHEN 'integer' THEN CAST(json_extract(metadata, @p${n}) AS TEXT)
   WHEN 'real' THEN CAST(json_extract(metadata, @p${n}) AS TEXT) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END = @v${n}`;

/** One SQLite file belongs to one node: at open, the store takes over the file's live sandboxes written
 * under another node id (a host renamed, e.g. a container restarted, still re-adopts its sandboxes)
 * and the rows from before the column. Not a file the nodes of a cluster share (`takeOver` false):
 * there another id is another node, whose live sandboxes are its own (or node_lost, not adopted). */
export class SqliteSandboxStore implements SandboxStore {
  private readonly stmts;
  private readonly insertIfRoom;
  /** Filtered list queries, by shape (status or not, number of metadata keys): a handful at most. */
  private readonly filtered = new Map<string, { page: ReturnType<Db["prepare"]>; count: ReturnType<Db["prepare"]> }>();

  constructor(
    private readonly db: Db,
    private readonly nodeId: string,
    takeOver = true,
  ) {
    migrate(db, SANDBOX_MIGRATIONS);
    if (takeOver)
      db.prepare(
        "UPDATE sandboxes SET node_id = @node WHERE node_id IS NULL OR (status IN ('running', 'paused') AND node_id <> @node)",
      ).run({
        node: nodeId,
      });
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO sandboxes (${SANDBOX_COLUMNS}) VALUES (${SANDBOX_COLUMNS.split(",")
          .map(() => "?")
          .join(", ")})`,
      ),
      get: db.prepare<[string], SandboxRow>("SELECT * FROM sandboxes WHERE id = ?"),
      page: db.prepare<[string, number, number], SandboxRow>(
        "SELECT * FROM sandboxes WHERE tenant_id = ? ORDER BY started_at DESC, id LIMIT ? OFFSET ?",
      ),
      count: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM sandboxes WHERE tenant_id = ?"),
      running: db.prepare<[string], SandboxRow>("SELECT * FROM sandboxes WHERE status = 'running' AND node_id = ?"),
      countRunning: db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM sandboxes WHERE status = 'running'"),
      countRunningTenant: db.prepare<[string], { n: number }>(
        "SELECT COUNT(*) AS n FROM sandboxes WHERE status = 'running' AND tenant_id = ?",
      ),
      setTimeout: db.prepare("UPDATE sandboxes SET timeout_at = ? WHERE id = ? AND status = 'running'"),
      setPaused: db.prepare("UPDATE sandboxes SET paused = ? WHERE id = ? AND status = 'running'"),
      end: db.prepare("UPDATE sandboxes SET status = ?, ended_at = ? WHERE id = ? AND status = 'running'"),
      takeOver: db.prepare(
        "UPDATE sandboxes SET node_id = @node, host_uid = @uid WHERE id = @id AND node_id = @from AND status = 'running'",
      ),
    };
    const { insert, countRunningTenant } = this.stmts;
    this.insertIfRoom = db.transaction((r: SandboxRecord, max: number) => {
      if ((countRunningTenant.get(r.tenantId)?.n ?? 0) >= max) return false;
      insert.run(...sandboxValues(r));
      return true;
    });
  }

  async insert(r: SandboxRecord): Promise<void> {
    this.stmts.insert.run(...sandboxValues(r));
  }

  async insertWithin(r: SandboxRecord, max: number): Promise<boolean> {
    // IMMEDIATE: the file's write lock is taken before the count, so processes sharing the file take turns.
    return this.insertIfRoom.immediate(r, max);
  }

  async get(id: string): Promise<SandboxRecord | undefined> {
    const row = this.stmts.get.get(id);
    return row ? toSandboxRecord(row) : undefined;
  }

  async listByTenant(tenantId: string, limit: number, offset: number, filter: ListFilter = {}) {
    const metadata = filter.metadata ?? [];
    if (filter.status !== undefined || metadata.length > 0) {
      const q = this.filteredQuery(filter.status !== undefined, metadata.length);
      const params: Record<string, string | number> = { tenant: tenantId };
      if (filter.status !== undefined) params.status = filter.status;
      metadata.forEach(([key, value], i) => {
        params[`p${i}`] = `$."${key}"`;
        params[`v${i}`] = value;
      });
      return {
        sandboxes: (q.page.all({ ...params, limit, offset }) as SandboxRow[]).map(toListedRecord),
        total: (q.count.get(params) as { n: number } | undefined)?.n ?? 0,
      };
    }
    return {
      sandboxes: this.stmts.page.all(tenantId, limit, offset).map(toListedRecord),
      total: this.stmts.count.get(tenantId)?.n ?? 0,
    };
  }

  private filteredQuery(status: boolean, keys: number) {
    const shape = `${status}:${keys}`;
    let q = this.filtered.get(shape);
    if (!q) {
      const where = [
        "tenant_id = @tenant",
        ...(status ? ["status = @status"] : []),
        ...Array.from({ length: keys }, (_, i) => metadataText(i)),
      ].join(" AND ");
      q = {
        page: this.db.prepare(`SELECT * FROM sandboxes WHERE ${where} ORDER BY started_at DESC, id LIMIT @limit OFFSET @offset`),
        count: this.db.prepare(`SELECT COUNT(*) AS n FROM sandboxes WHERE ${where}`),
      };
      this.filtered.set(shape, q);
    }
    return q;
  }

  async listRunning(): Promise<SandboxRecord[]> {
    return this.stmts.running.all(this.nodeId).map(toSandboxRecord);
  }

  async countRunning(tenantId?: string): Promise<number> {
    return (tenantId === undefined ? this.stmts.countRunning.get() : this.stmts.countRunningTenant.get(tenantId))?.n ?? 0;
  }

  async setTimeout(id: string, timeoutAt: string): Promise<void> {
    this.stmts.setTimeout.run(timeoutAt, id);
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    this.stmts.setPaused.run(paused ? 1 : 0, id);
  }

  async end(id: string, status: EndedStatus, endedAt: string): Promise<void> {
    this.stmts.end.run(status, endedAt, id);
  }

  async takeOver(id: string, from: string, hostUid: number): Promise<boolean> {
    return this.stmts.takeOver.run({ node: this.nodeId, uid: hostUid, id, from }).changes === 1;
  }
}
