// The E2B control API's snapshots, forks and templates, mapped onto this service's own (the
// sandbox lifecycle's snapshots and forks, the template list): createSnapshot, listSnapshots,
// deleteSnapshot, fork, and the template look-ups the SDKs make. A snapshot's id is what the SDKs
// then pass to Sandbox.create (control.ts starts a sandbox from it).
import type { FastifyPluginAsync } from "fastify";
import type { Services } from "../api/services.js";
import { invalid } from "../errors.js";
import type { SnapshotRecord } from "../sandbox/store/snapshots.js";
import { accessToken, checkedSeconds, connectionJson, DEFAULT_TEMPLATES, ENVD_VERSION } from "./control.js";
import { installControlErrors } from "./errors.js";
import { paged } from "./paging.js";

/** E2B's SnapshotInfo. Snapshots here have no names: `names` is always empty. */
const snapshotJson = (s: SnapshotRecord) => ({ snapshotID: s.id, names: [] as string[] });

interface IdParams {
  sandboxID: string;
}

/** The store's page size when the whole listing is read (it is bounded by AGENTBOX_SNAPSHOTS_PER_TENANT). */
const PAGE = 1000;

export const snapshotRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  installControlErrors(app);
  const { sandbox, config } = services;
  const lifecycle = services.sandboxes.lifecycle;
  const domain = config.e2bDomain ?? null;

  // The sandbox's files and settings, as POST /v1/agents/sandboxes/{id}/snapshots takes them. A
  // `name` is taken but not kept (snapshots here are named by their id only; `names` says so).
  app.post<{ Params: IdParams; Body: { name?: unknown } | undefined }>("/sandboxes/:sandboxID/snapshots", async (request, reply) => {
    const name = request.body?.name;
    if (name !== undefined && name !== null && typeof name !== "string") throw invalid("'name' must be a string");
    const snapshot = await lifecycle.snapshot(request.apiKey.tenantId, request.params.sandboxID);
    return reply.status(201).send(snapshotJson(snapshot));
  });

  // The tenant's snapshots, newest first: those it took (asked for, or at a sandbox's timeout), not
  // the ones that keep a long-paused sandbox's files (those are the paused sandbox, as in E2B).
  app.get<{ Querystring: Record<string, unknown> }>("/snapshots", async (request, reply) => {
    const { sandboxID, name } = request.query;
    const tenantId = request.apiKey.tenantId;
    const all: SnapshotRecord[] = [];
    for (let offset = 0; ; offset += PAGE) {
      const { snapshots, total } = await lifecycle.listSnapshots(tenantId, PAGE, offset);
      all.push(...snapshots);
      if (snapshots.length === 0 || offset + PAGE >= total) break;
    }
    const wanted = all.filter(
      (s) =>
        s.kind !== "hibernate" &&
        (sandboxID === undefined || sandboxID === "" || s.sandboxId === sandboxID) &&
        (name === undefined || name === "" || s.id === name),
    );
    return paged(wanted, request.query, reply).map(snapshotJson);
  });

  // The SDKs' deleteSnapshot deletes the snapshot's template; here a snapshot is not a template, so
  // only a snapshot's id is found (anything else is 404, the SDK's `false`).
  app.delete<{ Params: { templateID: string } }>("/templates/:templateID", async (request, reply) => {
    await lifecycle.deleteSnapshot(request.apiKey.tenantId, request.params.templateID);
    return reply.status(204).send();
  });

  // Copies of a running sandbox (its files and settings; kernel state is not copied), made all at
  // once: the answer has one entry per copy, or the request fails as a whole.
  app.post<{ Params: IdParams; Body: { timeout?: unknown; count?: unknown } | undefined }>(
    "/sandboxes/:sandboxID/fork",
    async (request, reply) => {
      const count = request.body?.count ?? 1;
      if (typeof count !== "number") throw invalid("'count' must be a number");
      const timeout = checkedSeconds(request.body?.timeout, "timeout");
      const records = await lifecycle.fork(request.apiKey.tenantId, request.params.sandboxID, count);
      const token = accessToken(request);
      const timed = await Promise.all(
        records.map((r) => (timeout === undefined ? r : sandbox.setSandboxTimeout(request.apiKey, r.id, timeout))),
      );
      return reply.status(201).send(timed.map((r) => ({ sandbox: connectionJson(r, token, domain) })));
    },
  );

  // Templates: this service's own, as E2B's Template.
  const templates = () =>
    sandbox.templates.map((t) => ({
      templateID: t.id,
      buildID: t.id,
      buildCount: 1,
      buildStatus: "ready",
      cpuCount: t.vcpu_count,
      memoryMB: t.memory_mb,
      diskSizeMB: t.disk_size_mb,
      envdVersion: ENVD_VERSION,
      public: t.visibility === "public",
      aliases: [t.name],
      names: [t.name],
      createdAt: t.created_at,
      updatedAt: t.updated_at,
      createdBy: null,
      lastSpawnedAt: null,
      spawnCount: 0,
    }));

  app.get("/templates", async () => templates());

  // Template.exists / aliasExists: 200 for a name a create takes as a template (E2B's default
  // names among them: they mean the default template), 404 otherwise.
  app.get<{ Params: { alias: string } }>("/templates/aliases/:alias", async (request, reply) => {
    const { alias } = request.params;
    if (DEFAULT_TEMPLATES.has(alias)) return { templateID: alias, public: true };
    const found = templates().find((t) => t.templateID === alias || t.aliases.includes(alias));
    if (!found) return reply.status(404).send({ code: 404, message: `Template '${alias.slice(0, 200)}' was not found` });
    return { templateID: found.templateID, public: found.public };
  });
};
