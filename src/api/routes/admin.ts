// The operator's admin API under /v1/admin: create, list and revoke API keys; read and set tenant
// quotas; suspend and resume tenants. Authenticated by the admin key only (auth.ts); the stores do the work.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { ApiError } from "../../errors.js";
import type { ApiKeyRecord } from "../../store/keys.js";
import { tenantQuotaDefaults } from "../../sandbox/settings.js";
import { effectiveQuotas, type TenantQuotas, type TenantRecord } from "../../store/tenants.js";
import {
  CreatedKey,
  CreateKeyBody,
  KeyIdParams,
  KeyList,
  KeyListQuery,
  PutTenantBody,
  RevokedKey,
  Tenant,
  TenantIdParams,
  TenantList,
} from "../schemas/admin.js";
import { errors } from "../schemas/common.js";
import type { Services } from "../services.js";
import { suspendTenant } from "../suspensions.js";

const keyJson = (r: ApiKeyRecord) => ({
  id: r.id,
  tenant_id: r.tenantId,
  name: r.name,
  prefix: r.prefix,
  created_at: r.createdAt,
  revoked_at: r.revokedAt,
  rate_limit_per_minute: r.rateLimitPerMinute,
  max_concurrent_runs: r.maxConcurrentRuns,
});

const quotasJson = <T extends number | null>(q: { [K in keyof TenantQuotas]: T }) => ({
  max_sandboxes: q.maxSandboxes,
  max_concurrent_runs: q.maxConcurrentRuns,
  memory_mb: q.memoryMb,
  max_processes: q.maxProcesses,
  storage_mb: q.storageMb,
  max_vector_indexes: q.maxVectorIndexes,
  max_vectors: q.maxVectors,
  vector_storage_mb: q.vectorStorageMb,
});

export const adminRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { keys, tenants, config } = services;
  const tags = ["admin"];
  const defaults = tenantQuotaDefaults(config);

  const tenantJson = (record: TenantRecord, configured: boolean, activeKeys: number) => ({
    tenant_id: record.id,
    quotas: quotasJson(record.quotas),
    effective: quotasJson(effectiveQuotas(record.quotas, defaults)),
    active_keys: activeKeys,
    suspended_at: record.suspendedAt,
    created_at: configured ? record.createdAt : null,
    updated_at: configured ? record.updatedAt : null,
  });
  /** Active keys of a tenant: the stored ones, and the bootstrap key, which is not stored but is one. */
  const countActive = (all: ApiKeyRecord[], tenantId: string) =>
    all.filter((k) => k.tenantId === tenantId && k.revokedAt === null).length + (keys.bootstrapTenant === tenantId ? 1 : 0);
  const activeKeys = async (tenantId: string) => countActive(await keys.list(), tenantId);
  const isConfigured = (tenantId: string) => tenants.list().some((t) => t.id === tenantId);

  app.post(
    "/keys",
    {
      schema: {
        tags,
        summary: "Create an API key",
        description: "The key is in this answer only; the service keeps its hash. Without tenant_id the key gets a tenant of its own.",
        body: CreateKeyBody,
        response: { 201: CreatedKey, ...errors(400, 401) },
      },
    },
    async (request, reply) => {
      const b = request.body;
      const { key, record } = await keys.create({
        name: b.name.trim(),
        tenantId: b.tenant_id,
        rateLimitPerMinute: b.rate_limit_per_minute,
        maxConcurrentRuns: b.max_concurrent_runs,
      });
      request.log.info({ key_id: record.id, tenant_id: record.tenantId }, "admin: API key created");
      return reply.status(201).send({ key, ...keyJson(record) });
    },
  );

  app.get(
    "/keys",
    {
      schema: {
        tags,
        summary: "List API keys",
        description: "Every key, revoked ones too, without the keys themselves.",
        querystring: KeyListQuery,
        response: { 200: KeyList, ...errors(400, 401) },
      },
    },
    async (request) => {
      const only = request.query.tenant_id;
      const rows = (await keys.list()).filter((k) => only === undefined || k.tenantId === only);
      return { keys: rows.map((r) => ({ ...keyJson(r), last_used_at: r.lastUsedAt })) };
    },
  );

  app.delete(
    "/keys/:id",
    {
      schema: {
        tags,
        summary: "Revoke an API key",
        description:
          "The key is refused from the next request on, and what it has open ends at once: event streams (their last event is " +
          "an `end` with a 401 error), file transfers, connections relayed to sandbox ports, and share links it made. " +
          "Revoking an unknown or already revoked key is a 404.",
        params: KeyIdParams,
        response: { 200: RevokedKey, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const record = await keys.get(id);
      if (!record || record.revokedAt !== null || !(await keys.revoke(id))) {
        throw new ApiError("not_found", `No active API key with id '${id}'`);
      }
      // Its open streams, transfers and port connections end now, not when they would have.
      const ended = services.openRequests.endKey(id);
      request.log.info({ key_id: id, tenant_id: record.tenantId, open_requests_ended: ended }, "admin: API key revoked");
      return { message: "API key revoked", id };
    },
  );

  app.get(
    "/tenants",
    {
      schema: {
        tags,
        summary: "List tenants",
        description:
          "Tenants that have quotas set or API keys (the bootstrap key's tenant `default` included), with their stored and effective quotas.",
        response: { 200: TenantList, ...errors(401) },
      },
    },
    async () => {
      const all = await keys.list();
      const configured = new Set(tenants.list().map((t) => t.id));
      const bootstrap = keys.bootstrapTenant === undefined ? [] : [keys.bootstrapTenant];
      const ids = [...new Set([...configured, ...all.map((k) => k.tenantId), ...bootstrap])].sort();
      return { tenants: ids.map((id) => tenantJson(tenants.get(id), configured.has(id), countActive(all, id))) };
    },
  );

  app.get(
    "/tenants/:id",
    {
      schema: {
        tags,
        summary: "A tenant's quotas",
        description: "Any tenant id answers: one never configured has every quota unset (null) and the defaults in effect.",
        params: TenantIdParams,
        response: { 200: Tenant, ...errors(400, 401) },
      },
    },
    async (request) => {
      const { id } = request.params;
      return tenantJson(tenants.get(id), isConfigured(id), await activeKeys(id));
    },
  );

  app.put(
    "/tenants/:id",
    {
      schema: {
        tags,
        summary: "Set a tenant's quotas",
        description:
          "Sets the quotas given (null: back to the default); the others are kept. A tenant not yet known is created. " +
          "New limits apply to the tenant's next requests and at once to its live sandboxes; a memory limit below what " +
          "they use now is refused (400 invalid_state) and nothing changes.",
        params: TenantIdParams,
        body: PutTenantBody,
        response: { 200: Tenant, ...errors(400, 401) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const b = request.body;
      const change: Partial<TenantQuotas> = {};
      if (b.max_sandboxes !== undefined) change.maxSandboxes = b.max_sandboxes;
      if (b.max_concurrent_runs !== undefined) change.maxConcurrentRuns = b.max_concurrent_runs;
      if (b.memory_mb !== undefined) change.memoryMb = b.memory_mb;
      if (b.max_processes !== undefined) change.maxProcesses = b.max_processes;
      if (b.storage_mb !== undefined) change.storageMb = b.storage_mb;
      if (b.max_vector_indexes !== undefined) change.maxVectorIndexes = b.max_vector_indexes;
      if (b.max_vectors !== undefined) change.maxVectors = b.max_vectors;
      if (b.vector_storage_mb !== undefined) change.vectorStorageMb = b.vector_storage_mb;
      const before = tenants.get(id).quotas;
      const record = await tenants.put(id, change);
      try {
        // The tenant's parent cgroups get the new memory and process limits now, not at its next sandbox.
        await services.sandboxes.applyTenantQuotas(id);
      } catch (err) {
        // Not applied (e.g. the sandboxes already use more memory): keep what was there before.
        await tenants.put(id, before);
        throw err;
      }
      request.log.info({ tenant_id: id, quotas: record.quotas }, "admin: tenant quotas set");
      return tenantJson(record, true, await activeKeys(id));
    },
  );

  app.post(
    "/tenants/:id/suspend",
    {
      schema: {
        tags,
        summary: "Suspend a tenant",
        description:
          "Every key of the tenant is refused from the next request on (403 tenant_suspended), what its keys hold open ends at " +
          "once (event streams, file transfers, connections relayed to sandbox ports, share links), and its running sandboxes " +
          "are paused (frozen: no CPU, memory kept). Resuming the tenant lets its keys in again; it resumes its sandboxes itself. " +
          "Suspending a suspended tenant changes nothing.",
        params: TenantIdParams,
        response: { 200: Tenant, ...errors(400, 401) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const done = await suspendTenant(services, id);
      request.log.info(
        { tenant_id: id, open_requests_ended: done.openRequestsEnded, paused: done.paused, pause_failed: done.failed },
        "admin: tenant suspended",
      );
      return tenantJson(tenants.get(id), true, await activeKeys(id));
    },
  );

  app.post(
    "/tenants/:id/resume",
    {
      schema: {
        tags,
        summary: "Let a suspended tenant back in",
        description: "Its keys work again from the next request on; its sandboxes stay paused until it resumes them.",
        params: TenantIdParams,
        response: { 200: Tenant, ...errors(400, 401) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const record = await tenants.setSuspended(id, false);
      request.log.info({ tenant_id: id }, "admin: tenant resumed");
      return tenantJson(record, true, await activeKeys(id));
    },
  );
};
