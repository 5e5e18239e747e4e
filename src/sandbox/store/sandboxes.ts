// Sandbox records: what a sandbox is (owner, template, limits, life span, status), kept so that a
// restart of the service can re-adopt or cleanly end every sandbox.
import type { EndReason } from "../../events/bus.js";
import type { Db } from "../../store/db.js";

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
}

/**
 * Where sandbox records are kept. Promise-returning so that another database can stand behind it;
 * the hot path never reads it (a live sandbox is found in the registry's memory).
 */
export interface SandboxStore {
  insert(record: SandboxRecord): Promise<void>;
  get(id: string): Promise<SandboxRecord | undefined>;
  listByTenant(
    tenantId: string,
    limit: number,
    offset: number,
    filter?: ListFilter,
  ): Promise<{ sandboxes: SandboxRecord[]; total: number }>;
  listRunning(): Promise<SandboxRecord[]>;
  countRunning(tenantId?: string): Promise<number>;
  setTimeout(id: string, timeoutAt: string): Promise<void>;
  end(id: string, status: EndedStatus, endedAt: string): Promise<void>;
}

interface Row {
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
}

const toRecord = (r: Row): SandboxRecord => ({
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
});

/**
 * A metadata value as the string a query compares it with: strings as they are, numbers and
 * booleans as JSON writes them; objects, arrays and null never match.
 */
const metadataText = (n: number) =>
  `CASE json_type(metadata, @p${n}) WHEN 'text' THEN json_extract(metadata, @p${n}) WHEN 'integer' THEN CAST(json_extract(metadata, @p${n}) AS TEXT)
   WHEN 'real' THEN CAST(json_extract(metadata, @p${n}) AS TEXT) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END = @v${n}`;

export class SqliteSandboxStore implements SandboxStore {
  private readonly stmts;
  /** Filtered list queries, by shape (status or not, number of metadata keys): a handful at most. */
  private readonly filtered = new Map<string, { page: ReturnType<Db["prepare"]>; count: ReturnType<Db["prepare"]> }>();

  constructor(private readonly db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO sandboxes (id, tenant_id, template, status, metadata, env_vars, cpu_count, memory_mb, host_uid, started_at, timeout_at, ended_at)
         VALUES (@id, @tenant_id, @template, @status, @metadata, @env_vars, @cpu_count, @memory_mb, @host_uid, @started_at, @timeout_at, @ended_at)`,
      ),
      get: db.prepare<[string], Row>("SELECT * FROM sandboxes WHERE id = ?"),
      page: db.prepare<[string, number, number], Row>(
        "SELECT * FROM sandboxes WHERE tenant_id = ? ORDER BY started_at DESC, id LIMIT ? OFFSET ?",
      ),
      count: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM sandboxes WHERE tenant_id = ?"),
      running: db.prepare<[], Row>("SELECT * FROM sandboxes WHERE status = 'running'"),
      countRunning: db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM sandboxes WHERE status = 'running'"),
      countRunningTenant: db.prepare<[string], { n: number }>(
        "SELECT COUNT(*) AS n FROM sandboxes WHERE status = 'running' AND tenant_id = ?",
      ),
      setTimeout: db.prepare("UPDATE sandboxes SET timeout_at = ? WHERE id = ? AND status = 'running'"),
      end: db.prepare("UPDATE sandboxes SET status = ?, ended_at = ? WHERE id = ? AND status = 'running'"),
    };
  }

  async insert(r: SandboxRecord): Promise<void> {
    this.stmts.insert.run({
      id: r.id,
      tenant_id: r.tenantId,
      template: r.template,
      status: r.status,
      metadata: JSON.stringify(r.metadata),
      env_vars: JSON.stringify(r.envVars),
      cpu_count: r.cpuCount,
      memory_mb: r.memoryMb,
      host_uid: r.hostUid,
      started_at: r.startedAt,
      timeout_at: r.timeoutAt,
      ended_at: r.endedAt,
    });
  }

  async get(id: string): Promise<SandboxRecord | undefined> {
    const row = this.stmts.get.get(id);
    return row ? toRecord(row) : undefined;
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
        sandboxes: (q.page.all({ ...params, limit, offset }) as Row[]).map(toRecord),
        total: (q.count.get(params) as { n: number } | undefined)?.n ?? 0,
      };
    }
    return {
      sandboxes: this.stmts.page.all(tenantId, limit, offset).map(toRecord),
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
    return this.stmts.running.all().map(toRecord);
  }

  async countRunning(tenantId?: string): Promise<number> {
    return (tenantId === undefined ? this.stmts.countRunning.get() : this.stmts.countRunningTenant.get(tenantId))?.n ?? 0;
  }

  async setTimeout(id: string, timeoutAt: string): Promise<void> {
    this.stmts.setTimeout.run(timeoutAt, id);
  }

  async end(id: string, status: EndedStatus, endedAt: string): Promise<void> {
    this.stmts.end.run(status, endedAt, id);
  }
}
