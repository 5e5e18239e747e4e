// Template and build records in PostgreSQL (the twin of store.ts): every node reads and writes the
// same rows. A template's root filesystem is not here: it is on the disk of the node that built or
// pulled it (docs/cluster.md, templates in a cluster).
import { inTransaction, migratePg, type PgMigration, type PgPool } from "../store/pg.js";
import {
  type BuildRecord,
  type BuildRow,
  type TemplateRecord,
  type TemplateRow,
  type TemplateFiles,
  type TemplateState,
  type TemplateStore,
  toBuild,
  toTemplate,
} from "./store.js";

export const PG_TEMPLATE_MIGRATIONS: PgMigration[] = [
  {
    area: "templates",
    version: 1,
    sql: `CREATE TABLE templates (
       id TEXT COLLATE "C" PRIMARY KEY,
       tenant_id TEXT COLLATE "C" NOT NULL,
       name TEXT COLLATE "C" NOT NULL,
       description TEXT COLLATE "C" NOT NULL,
       vcpu_count INTEGER NOT NULL,
       memory_mb INTEGER NOT NULL,
       disk_mb INTEGER NOT NULL,
       base_image TEXT COLLATE "C",
       environment TEXT COLLATE "C" NOT NULL,
       workdir TEXT COLLATE "C",
       tags TEXT COLLATE "C" NOT NULL,
       rootfs TEXT COLLATE "C",
       python TEXT COLLATE "C",
       home TEXT COLLATE "C",
       state TEXT COLLATE "C" NOT NULL,
       created_at TEXT COLLATE "C" NOT NULL,
       updated_at TEXT COLLATE "C" NOT NULL,
       UNIQUE (tenant_id, name)
     );
     CREATE INDEX templates_rootfs ON templates (rootfs);
     CREATE TABLE template_builds (
       id TEXT COLLATE "C" PRIMARY KEY,
       template_id TEXT COLLATE "C" NOT NULL,
       tenant_id TEXT COLLATE "C" NOT NULL,
       status TEXT COLLATE "C" NOT NULL,
       phase TEXT COLLATE "C" NOT NULL,
       progress INTEGER NOT NULL,
       error TEXT COLLATE "C",
       started_at TEXT COLLATE "C",
       completed_at TEXT COLLATE "C",
       created_at TEXT COLLATE "C" NOT NULL,
       -- The node that runs the build: a node's start fails only its own unfinished builds.
       node_id TEXT COLLATE "C" NOT NULL,
       -- Insertion order: the newest of two builds made in the same millisecond (SQLite's rowid).
       n BIGSERIAL NOT NULL
     );
     CREATE INDEX template_builds_template ON template_builds (template_id, created_at);
     CREATE INDEX template_builds_tenant ON template_builds (tenant_id, created_at);
     CREATE INDEX template_builds_unfinished ON template_builds (node_id) WHERE status NOT IN ('completed', 'failed');`,
  },
  {
    area: "templates",
    version: 2,
    sql: `-- Which nodes hold a template's files (its root filesystem, its saved /home/user): placement
     -- prefers them, and a node without them fetches them from one (docs/cluster.md).
     CREATE TABLE template_copies (
       template_id TEXT COLLATE "C" NOT NULL,
       node_id TEXT COLLATE "C" NOT NULL,
       PRIMARY KEY (template_id, node_id)
     );
     CREATE INDEX template_copies_node ON template_copies (node_id);
     -- A root filesystem's content digest, which a fetched copy is checked against.
     CREATE TABLE rootfs_contents (
       rootfs TEXT COLLATE "C" PRIMARY KEY,
       sha256 TEXT COLLATE "C" NOT NULL
     );`,
  },
];

const BUILD_COLUMNS = "id, template_id, tenant_id, status, phase, progress, error, started_at, completed_at, created_at, node_id";

export class PgTemplateStore implements TemplateStore {
  private constructor(
    private readonly pool: PgPool,
    private readonly nodeId: string,
  ) {}

  /** `nodeId`: this node (AGENTBOX_NODE_ID), the owner of the builds it inserts. */
  static async open(pool: PgPool, nodeId: string): Promise<PgTemplateStore> {
    await migratePg(pool, PG_TEMPLATE_MIGRATIONS);
    return new PgTemplateStore(pool, nodeId);
  }

  private async one<R>(sql: string, params: unknown[]): Promise<R | undefined> {
    return (await this.pool.query(sql, params)).rows[0] as R | undefined;
  }

  async insertTemplate(t: TemplateRecord): Promise<boolean> {
    // ON CONFLICT DO NOTHING: the tenant's name taken inserts nothing, whichever node asked first.
    const res = await this.pool.query(
      `INSERT INTO templates (id, tenant_id, name, description, vcpu_count, memory_mb, disk_mb, base_image, environment, workdir, tags, rootfs, python, home, state, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) ON CONFLICT DO NOTHING`,
      [
        t.id,
        t.tenantId,
        t.name,
        t.description,
        t.vcpuCount,
        t.memoryMb,
        t.diskMb,
        t.baseImage,
        JSON.stringify(t.environment),
        t.workdir,
        JSON.stringify(t.tags),
        t.rootfs,
        t.python,
        t.home,
        t.state,
        t.createdAt,
        t.updatedAt,
      ],
    );
    return res.rowCount === 1;
  }

  async template(id: string): Promise<TemplateRecord | undefined> {
    const row = await this.one<TemplateRow>("SELECT * FROM templates WHERE id = $1", [id]);
    return row && toTemplate(row);
  }

  async templateByName(tenantId: string, name: string): Promise<TemplateRecord | undefined> {
    const row = await this.one<TemplateRow>("SELECT * FROM templates WHERE tenant_id = $1 AND name = $2", [tenantId, name]);
    return row && toTemplate(row);
  }

  async readyTemplates(tenantId: string): Promise<TemplateRecord[]> {
    const { rows } = await this.pool.query<TemplateRow>(
      "SELECT * FROM templates WHERE tenant_id = $1 AND state = 'ready' ORDER BY created_at, id",
      [tenantId],
    );
    return rows.map(toTemplate);
  }

  async countTemplates(tenantId: string): Promise<number> {
    return (await this.one<{ n: number }>("SELECT COUNT(*) AS n FROM templates WHERE tenant_id = $1", [tenantId]))?.n ?? 0;
  }

  async setBuilt(id: string, rootfs: string, python: string | null, at: string): Promise<void> {
    await this.pool.query("UPDATE templates SET rootfs = $1, python = $2, state = 'ready', updated_at = $3 WHERE id = $4", [
      rootfs,
      python,
      at,
      id,
    ]);
  }

  async setState(id: string, state: TemplateState, at: string): Promise<void> {
    await this.pool.query("UPDATE templates SET state = $1, updated_at = $2 WHERE id = $3", [state, at, id]);
  }

  async deleteTemplate(id: string): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await client.query("DELETE FROM template_builds WHERE template_id = $1", [id]);
      await client.query("DELETE FROM template_copies WHERE template_id = $1", [id]);
      await client.query("DELETE FROM templates WHERE id = $1", [id]);
    });
  }

  async rootfsUsers(rootfs: string): Promise<number> {
    return (await this.one<{ n: number }>("SELECT COUNT(*) AS n FROM templates WHERE rootfs = $1", [rootfs]))?.n ?? 0;
  }

  async allRootfs(): Promise<string[]> {
    const { rows } = await this.pool.query<{ rootfs: string }>("SELECT DISTINCT rootfs FROM templates WHERE rootfs IS NOT NULL");
    return rows.map((r) => r.rootfs);
  }

  async readyFiles(): Promise<TemplateFiles[]> {
    return (await this.pool.query<TemplateFiles>("SELECT id, rootfs, home FROM templates WHERE state = 'ready'")).rows;
  }

  async addCopy(templateId: string, nodeId: string): Promise<void> {
    await this.pool.query("INSERT INTO template_copies (template_id, node_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", [
      templateId,
      nodeId,
    ]);
  }

  async removeCopy(templateId: string, nodeId: string): Promise<void> {
    await this.pool.query("DELETE FROM template_copies WHERE template_id = $1 AND node_id = $2", [templateId, nodeId]);
  }

  async copies(templateId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ node_id: string }>(
      "SELECT node_id FROM template_copies WHERE template_id = $1 ORDER BY node_id",
      [templateId],
    );
    return rows.map((r) => r.node_id);
  }

  async copiesOn(nodeId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ template_id: string }>(
      "SELECT template_id FROM template_copies WHERE node_id = $1 ORDER BY template_id",
      [nodeId],
    );
    return rows.map((r) => r.template_id);
  }

  async contentDigest(rootfs: string): Promise<string | undefined> {
    return (await this.one<{ sha256: string }>("SELECT sha256 FROM rootfs_contents WHERE rootfs = $1", [rootfs]))?.sha256;
  }

  async setContentDigest(rootfs: string, sha256: string): Promise<void> {
    await this.pool.query("INSERT INTO rootfs_contents (rootfs, sha256) VALUES ($1, $2) ON CONFLICT DO NOTHING", [rootfs, sha256]);
  }

  async insertBuild(b: BuildRecord): Promise<void> {
    await this.pool.query(`INSERT INTO template_builds (${BUILD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, [
      b.id,
      b.templateId,
      b.tenantId,
      b.status,
      b.phase,
      b.progress,
      b.error,
      b.startedAt,
      b.completedAt,
      b.createdAt,
      b.nodeId ?? this.nodeId,
    ]);
  }

  async build(id: string): Promise<BuildRecord | undefined> {
    const row = await this.one<BuildRow>(`SELECT ${BUILD_COLUMNS} FROM template_builds WHERE id = $1`, [id]);
    return row && toBuild(row);
  }

  async lastBuild(templateId: string): Promise<BuildRecord | undefined> {
    const row = await this.one<BuildRow>(
      `SELECT ${BUILD_COLUMNS} FROM template_builds WHERE template_id = $1 ORDER BY created_at DESC, n DESC LIMIT 1`,
      [templateId],
    );
    return row && toBuild(row);
  }

  async updateBuild(b: BuildRecord): Promise<void> {
    await this.pool.query(
      "UPDATE template_builds SET status = $1, phase = $2, progress = $3, error = $4, started_at = $5, completed_at = $6 WHERE id = $7",
      [b.status, b.phase, b.progress, b.error, b.startedAt, b.completedAt, b.id],
    );
  }

  async recentBuilds(tenantId: string, limit: number): Promise<(BuildRecord & { templateName: string })[]> {
    const { rows } = await this.pool.query<BuildRow & { template_name: string | null }>(
      `SELECT ${BUILD_COLUMNS.split(", ")
        .map((c) => `b.${c}`)
        .join(", ")}, t.name AS template_name
       FROM template_builds b LEFT JOIN templates t ON t.id = b.template_id
       WHERE b.tenant_id = $1 ORDER BY b.created_at DESC, b.id LIMIT $2`,
      [tenantId, limit],
    );
    return rows.map((r) => ({ ...toBuild(r), templateName: r.template_name ?? "" }));
  }

  /** This node's unfinished builds only: another node's are running there. */
  async unfinishedBuilds(): Promise<BuildRecord[]> {
    const { rows } = await this.pool.query<BuildRow>(
      `SELECT ${BUILD_COLUMNS} FROM template_builds WHERE node_id = $1 AND status NOT IN ('completed', 'failed', 'cancelled')`,
      [this.nodeId],
    );
    return rows.map(toBuild);
  }
}
