// Records of tenants' templates and their builds: the store's interface and its SQLite implementation
// (in the service's database). A template's root filesystem itself is a directory named by its
// digest (./rootfs.ts); rows only point at it.
import { type Db, type Migration, migrate } from "../store/db.js";

export type TemplateState = "building" | "ready" | "failed";
export type BuildStatus = "pending" | "started" | "running" | "completed" | "failed" | "cancelled";
export type BuildPhase = "initializing" | "preparing" | "building" | "finalizing" | "completed";

export interface TemplateRecord {
  id: string;
  tenantId: string;
  name: string;
  description: string;
  vcpuCount: number;
  memoryMb: number;
  diskMb: number;
  baseImage: string | null;
  environment: Record<string, string>;
  /** Where its sandboxes start (a Dockerfile's WORKDIR); null: /home/user. */
  workdir: string | null;
  tags: Record<string, string>;
  /** The root filesystem's digest (sha256 hex) once built. */
  rootfs: string | null;
  /** The image's own python3 (its path in the image) when the runtime can run on it. */
  python: string | null;
  /**
   * SHA-256 of the archive of files its sandboxes start with in /home/user (a template saved from
   * a sandbox, and the templates built on one); null: none.
   */
  home: string | null;
  state: TemplateState;
  createdAt: string;
  updatedAt: string;
}

export interface BuildRecord {
  id: string;
  templateId: string;
  tenantId: string;
  status: BuildStatus;
  phase: BuildPhase;
  progress: number;
  error: string | null;
  startedAt: string | null;
  completedAt: string | null;
  createdAt: string;
  /** The node that runs (ran) the build: its log is there (null: recorded before nodes were). */
  nodeId: string | null;
}

/** A template's row as both stores hold it (SQLite and PostgreSQL). */
export interface TemplateRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string;
  vcpu_count: number;
  memory_mb: number;
  disk_mb: number;
  base_image: string | null;
  environment: string;
  workdir: string | null;
  tags: string;
  rootfs: string | null;
  python: string | null;
  home: string | null;
  state: TemplateState;
  created_at: string;
  updated_at: string;
}

export interface BuildRow {
  id: string;
  template_id: string;
  tenant_id: string;
  status: BuildStatus;
  phase: BuildPhase;
  progress: number;
  error: string | null;
  started_at: string | null;
  completed_at: string | null;
  created_at: string;
  node_id: string | null;
}

export const toTemplate = (r: TemplateRow): TemplateRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  name: r.name,
  description: r.description,
  vcpuCount: r.vcpu_count,
  memoryMb: r.memory_mb,
  diskMb: r.disk_mb,
  baseImage: r.base_image,
  environment: JSON.parse(r.environment),
  workdir: r.workdir,
  tags: JSON.parse(r.tags),
  rootfs: r.rootfs,
  python: r.python,
  home: r.home,
  state: r.state,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const toBuild = (r: BuildRow): BuildRecord => ({
  id: r.id,
  templateId: r.template_id,
  tenantId: r.tenant_id,
  status: r.status,
  phase: r.phase,
  progress: r.progress,
  error: r.error,
  startedAt: r.started_at,
  completedAt: r.completed_at,
  createdAt: r.created_at,
  nodeId: r.node_id ?? null,
});

/** The templates area's schema (run by the store's constructor through the one migration runner). */
export const TEMPLATE_MIGRATIONS: Migration[] = [
  {
    area: "templates",
    version: 1,
    up: (db) =>
      db.exec(
        `CREATE TABLE IF NOT EXISTS templates (
         id TEXT PRIMARY KEY,
         tenant_id TEXT NOT NULL,
         name TEXT NOT NULL,
         description TEXT NOT NULL,
         vcpu_count INTEGER NOT NULL,
         memory_mb INTEGER NOT NULL,
         disk_mb INTEGER NOT NULL,
         base_image TEXT,
         environment TEXT NOT NULL,
         tags TEXT NOT NULL,
         rootfs TEXT,
         python TEXT,
         state TEXT NOT NULL,
         created_at TEXT NOT NULL,
         updated_at TEXT NOT NULL
       );
       CREATE UNIQUE INDEX IF NOT EXISTS templates_tenant_name ON templates (tenant_id, name);
       CREATE TABLE IF NOT EXISTS template_builds (
         id TEXT PRIMARY KEY,
         template_id TEXT NOT NULL,
         tenant_id TEXT NOT NULL,
         status TEXT NOT NULL,
         phase TEXT NOT NULL,
         progress INTEGER NOT NULL,
         error TEXT,
         started_at TEXT,
         completed_at TEXT,
         created_at TEXT NOT NULL
       );
       CREATE INDEX IF NOT EXISTS template_builds_template ON template_builds (template_id, created_at);`,
      ),
  },
  { area: "templates", version: 2, up: (db) => db.exec("ALTER TABLE templates ADD COLUMN workdir TEXT") },
  { area: "templates", version: 3, up: (db) => db.exec("ALTER TABLE templates ADD COLUMN home TEXT") },
  {
    area: "templates",
    version: 4,
    up: (db) =>
      db.exec(
        `CREATE TABLE IF NOT EXISTS template_copies (
         template_id TEXT NOT NULL,
         node_id TEXT NOT NULL,
         PRIMARY KEY (template_id, node_id)
       );
       CREATE TABLE IF NOT EXISTS rootfs_contents (
         rootfs TEXT PRIMARY KEY,
         sha256 TEXT NOT NULL
       );`,
      ),
  },
  // The node that runs each build (its log is there; the cluster's nodes forward its log requests to it).
  { area: "templates", version: 5, up: (db) => db.exec("ALTER TABLE template_builds ADD COLUMN node_id TEXT") },
];

/** A ready template's files, as a node holds them (or not). */
export interface TemplateFiles {
  id: string;
  rootfs: string | null;
  home: string | null;
}

/**
 * The templates' and builds' records. Promise-returning so that another database can stand behind
 * it; a template's root filesystem is not in it (./rootfs.ts).
 */
export interface TemplateStore {
  /** Inserts a template; false when the tenant already has one of that name (checked by the insert itself). */
  insertTemplate(t: TemplateRecord): Promise<boolean>;
  /** Any tenant's template by id, or undefined. */
  template(id: string): Promise<TemplateRecord | undefined>;
  /** The tenant's template of that name, or undefined. */
  templateByName(tenantId: string, name: string): Promise<TemplateRecord | undefined>;
  /** The tenant's ready templates, oldest first. */
  readyTemplates(tenantId: string): Promise<TemplateRecord[]>;
  /** How many templates the tenant has, in any state. */
  countTemplates(tenantId: string): Promise<number>;
  /** The template is ready on this root filesystem (and the image's python, if it has one). */
  setBuilt(id: string, rootfs: string, python: string | null, at: string): Promise<void>;
  setState(id: string, state: TemplateState, at: string): Promise<void>;
  /** Removes the template and its builds; an unknown id is harmless. */
  deleteTemplate(id: string): Promise<void>;
  /** How many templates share a root filesystem (it is removed when none does). */
  rootfsUsers(rootfs: string): Promise<number>;
  /** Every root filesystem a template points at. */
  allRootfs(): Promise<string[]>;
  /** Every ready template's files (what a node's start checks it holds). */
  readyFiles(): Promise<TemplateFiles[]>;
  /** Node `nodeId` holds the template's files (its root filesystem, its saved /home/user); idempotent. */
  addCopy(templateId: string, nodeId: string): Promise<void>;
  /** The node no longer holds them; an unknown pair is harmless. */
  removeCopy(templateId: string, nodeId: string): Promise<void>;
  /** The nodes recorded to hold the template's files, by id. */
  copies(templateId: string): Promise<string[]>;
  /** The templates a node is recorded to hold. */
  copiesOn(nodeId: string): Promise<string[]>;
  /** The content digest of a root filesystem's tree (./rootfs.ts contentDigest), once a node recorded it. */
  contentDigest(rootfs: string): Promise<string | undefined>;
  /** Records it; the first one recorded stays (every node computes the same from the same tree). */
  setContentDigest(rootfs: string, sha256: string): Promise<void>;
  insertBuild(b: BuildRecord): Promise<void>;
  build(id: string): Promise<BuildRecord | undefined>;
  /** The template's newest build, or undefined. */
  lastBuild(templateId: string): Promise<BuildRecord | undefined>;
  /** Writes the build's status, phase, progress, error and times (the rest does not change). */
  updateBuild(b: BuildRecord): Promise<void>;
  /** The tenant's latest builds, newest first, with their template's name (for the dashboard). */
  recentBuilds(tenantId: string, limit: number): Promise<(BuildRecord & { templateName: string })[]>;
  /** Builds a stop of this node left unfinished (neither completed nor failed): with SQLite the file's
   * (it belongs to one node), with PostgreSQL those this node inserted. */
  unfinishedBuilds(): Promise<BuildRecord[]>;
}

export class SqliteTemplateStore implements TemplateStore {
  private readonly stmts;
  /** A template's builds go with it, in one transaction. */
  private readonly deleteTemplateAndBuilds: (id: string) => void;

  constructor(db: Db) {
    migrate(db, TEMPLATE_MIGRATIONS);
    this.stmts = {
      insertTemplate: db.prepare(
        `INSERT OR IGNORE INTO templates (id, tenant_id, name, description, vcpu_count, memory_mb, disk_mb, base_image, environment, workdir, tags, rootfs, python, home, state, created_at, updated_at)
         VALUES (@id, @tenant_id, @name, @description, @vcpu_count, @memory_mb, @disk_mb, @base_image, @environment, @workdir, @tags, @rootfs, @python, @home, @state, @created_at, @updated_at)`,
      ),
      getTemplate: db.prepare<[string], TemplateRow>("SELECT * FROM templates WHERE id = ?"),
      byName: db.prepare<[string, string], TemplateRow>("SELECT * FROM templates WHERE tenant_id = ? AND name = ?"),
      listReady: db.prepare<[string], TemplateRow>(
        "SELECT * FROM templates WHERE tenant_id = ? AND state = 'ready' ORDER BY created_at, id",
      ),
      count: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM templates WHERE tenant_id = ?"),
      setBuilt: db.prepare("UPDATE templates SET rootfs = ?, python = ?, state = 'ready', updated_at = ? WHERE id = ?"),
      setState: db.prepare("UPDATE templates SET state = ?, updated_at = ? WHERE id = ?"),
      deleteTemplate: db.prepare("DELETE FROM templates WHERE id = ?"),
      deleteBuilds: db.prepare("DELETE FROM template_builds WHERE template_id = ?"),
      rootfsUsers: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM templates WHERE rootfs = ?"),
      allRootfs: db.prepare<[], { rootfs: string }>("SELECT DISTINCT rootfs FROM templates WHERE rootfs IS NOT NULL"),
      readyFiles: db.prepare<[], TemplateFiles>("SELECT id, rootfs, home FROM templates WHERE state = 'ready'"),
      addCopy: db.prepare("INSERT OR IGNORE INTO template_copies (template_id, node_id) VALUES (?, ?)"),
      removeCopy: db.prepare("DELETE FROM template_copies WHERE template_id = ? AND node_id = ?"),
      deleteCopies: db.prepare("DELETE FROM template_copies WHERE template_id = ?"),
      copies: db.prepare<[string], { node_id: string }>("SELECT node_id FROM template_copies WHERE template_id = ? ORDER BY node_id"),
      copiesOn: db.prepare<[string], { template_id: string }>(
        "SELECT template_id FROM template_copies WHERE node_id = ? ORDER BY template_id",
      ),
      contentDigest: db.prepare<[string], { sha256: string }>("SELECT sha256 FROM rootfs_contents WHERE rootfs = ?"),
      setContentDigest: db.prepare("INSERT OR IGNORE INTO rootfs_contents (rootfs, sha256) VALUES (?, ?)"),
      insertBuild: db.prepare(
        `INSERT INTO template_builds (id, template_id, tenant_id, status, phase, progress, error, started_at, completed_at, created_at, node_id)
         VALUES (@id, @template_id, @tenant_id, @status, @phase, @progress, @error, @started_at, @completed_at, @created_at, @node_id)`,
      ),
      getBuild: db.prepare<[string], BuildRow>("SELECT * FROM template_builds WHERE id = ?"),
      lastBuild: db.prepare<[string], BuildRow>(
        "SELECT * FROM template_builds WHERE template_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
      ),
      updateBuild: db.prepare(
        "UPDATE template_builds SET status = @status, phase = @phase, progress = @progress, error = @error, started_at = @started_at, completed_at = @completed_at WHERE id = @id",
      ),
      recentBuilds: db.prepare<[string, number], BuildRow & { template_name: string | null }>(
        `SELECT b.*, t.name AS template_name FROM template_builds b LEFT JOIN templates t ON t.id = b.template_id
         WHERE b.tenant_id = ? ORDER BY b.created_at DESC, b.id LIMIT ?`,
      ),
      unfinished: db.prepare<[], BuildRow>("SELECT * FROM template_builds WHERE status NOT IN ('completed', 'failed', 'cancelled')"),
    };
    this.deleteTemplateAndBuilds = db.transaction((id: string) => {
      this.stmts.deleteBuilds.run(id);
      this.stmts.deleteCopies.run(id);
      this.stmts.deleteTemplate.run(id);
    });
  }

  async insertTemplate(t: TemplateRecord): Promise<boolean> {
    const inserted = this.stmts.insertTemplate.run({
      id: t.id,
      tenant_id: t.tenantId,
      name: t.name,
      description: t.description,
      vcpu_count: t.vcpuCount,
      memory_mb: t.memoryMb,
      disk_mb: t.diskMb,
      base_image: t.baseImage,
      environment: JSON.stringify(t.environment),
      workdir: t.workdir,
      tags: JSON.stringify(t.tags),
      rootfs: t.rootfs,
      python: t.python,
      home: t.home,
      state: t.state,
      created_at: t.createdAt,
      updated_at: t.updatedAt,
    });
    return inserted.changes === 1;
  }

  async template(id: string): Promise<TemplateRecord | undefined> {
    const row = this.stmts.getTemplate.get(id);
    return row && toTemplate(row);
  }

  async templateByName(tenantId: string, name: string): Promise<TemplateRecord | undefined> {
    const row = this.stmts.byName.get(tenantId, name);
    return row && toTemplate(row);
  }

  async readyTemplates(tenantId: string): Promise<TemplateRecord[]> {
    return this.stmts.listReady.all(tenantId).map(toTemplate);
  }

  async countTemplates(tenantId: string): Promise<number> {
    return this.stmts.count.get(tenantId)?.n ?? 0;
  }

  async setBuilt(id: string, rootfs: string, python: string | null, at: string): Promise<void> {
    this.stmts.setBuilt.run(rootfs, python, at, id);
  }

  async setState(id: string, state: TemplateState, at: string): Promise<void> {
    this.stmts.setState.run(state, at, id);
  }

  async deleteTemplate(id: string): Promise<void> {
    this.deleteTemplateAndBuilds(id);
  }

  async rootfsUsers(rootfs: string): Promise<number> {
    return this.stmts.rootfsUsers.get(rootfs)?.n ?? 0;
  }

  async allRootfs(): Promise<string[]> {
    return this.stmts.allRootfs.all().map((r) => r.rootfs);
  }

  async readyFiles(): Promise<TemplateFiles[]> {
    return this.stmts.readyFiles.all();
  }

  async addCopy(templateId: string, nodeId: string): Promise<void> {
    this.stmts.addCopy.run(templateId, nodeId);
  }

  async removeCopy(templateId: string, nodeId: string): Promise<void> {
    this.stmts.removeCopy.run(templateId, nodeId);
  }

  async copies(templateId: string): Promise<string[]> {
    return this.stmts.copies.all(templateId).map((r) => r.node_id);
  }

  async copiesOn(nodeId: string): Promise<string[]> {
    return this.stmts.copiesOn.all(nodeId).map((r) => r.template_id);
  }

  async contentDigest(rootfs: string): Promise<string | undefined> {
    return this.stmts.contentDigest.get(rootfs)?.sha256;
  }

  async setContentDigest(rootfs: string, sha256: string): Promise<void> {
    this.stmts.setContentDigest.run(rootfs, sha256);
  }

  async insertBuild(b: BuildRecord): Promise<void> {
    this.stmts.insertBuild.run(buildRow(b));
  }

  async build(id: string): Promise<BuildRecord | undefined> {
    const row = this.stmts.getBuild.get(id);
    return row && toBuild(row);
  }

  async lastBuild(templateId: string): Promise<BuildRecord | undefined> {
    const row = this.stmts.lastBuild.get(templateId);
    return row && toBuild(row);
  }

  async updateBuild(b: BuildRecord): Promise<void> {
    this.stmts.updateBuild.run(buildRow(b));
  }

  /** The tenant's latest builds, newest first, with their template's name. */
  async recentBuilds(tenantId: string, limit: number): Promise<(BuildRecord & { templateName: string })[]> {
    return this.stmts.recentBuilds.all(tenantId, limit).map((r) => ({ ...toBuild(r), templateName: r.template_name ?? "" }));
  }

  async unfinishedBuilds(): Promise<BuildRecord[]> {
    return this.stmts.unfinished.all().map(toBuild);
  }
}

function buildRow(b: BuildRecord) {
  return {
    id: b.id,
    template_id: b.templateId,
    tenant_id: b.tenantId,
    status: b.status,
    phase: b.phase,
    progress: b.progress,
    error: b.error,
    started_at: b.startedAt,
    completed_at: b.completedAt,
    created_at: b.createdAt,
    node_id: b.nodeId,
  };
}
