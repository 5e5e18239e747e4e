// The E2B control API (what E2B_API_URL points at): create, list, get, kill, timeout, connect,
// pause and resume of sandboxes, mapped onto the sandbox service and its lifecycle. Sandboxes are
// this service's own: the same keys, tenants, quotas and limits as POST /v1/agents/sandboxes.
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { Services } from "../api/services.js";
import { ApiError, invalid, sandboxNotFound } from "../errors.js";
import type { Caller } from "../sandbox/service.js";
import { MAX_METADATA_FILTERS, METADATA_FILTER_KEY, type SandboxRecord } from "../sandbox/store/sandboxes.js";
import { installControlErrors } from "./errors.js";
import { paged } from "./paging.js";

/**
 * The envd version sandboxes report. The SDKs switch features on by it: 0.5.2 is the newest whose
 * features this facade has all of (stdin close; no octet-stream uploads (0.5.7), file metadata
 * (0.6.2) or watch options (0.6.3)).
 */
export const ENVD_VERSION = "0.5.2";

/** E2B's template names that mean "the default sandbox" here (the code interpreter's and the base one). */
export const DEFAULT_TEMPLATES = new Set(["base", "code-interpreter", "code-interpreter-v1", "code-interpreter-stateful"]);

type Live = SandboxRecord & { status: "running" | "paused" };
const isLive = (r: SandboxRecord): r is Live => r.status === "running" || r.status === "paused";

/** The caller's key, handed back as the sandbox's access token (the in-sandbox requests carry it). */
export function accessToken(request: FastifyRequest): string | undefined {
  const v = request.headers["x-api-key"];
  return (Array.isArray(v) ? v[0] : v)?.trim();
}

function listedJson(r: Live) {
  return {
    sandboxID: r.id,
    templateID: r.template,
    alias: r.template,
    clientID: "agentbox",
    startedAt: r.startedAt,
    endAt: r.timeoutAt,
    cpuCount: r.cpuCount,
    memoryMB: r.memoryMb,
    diskSizeMB: 0,
    metadata: r.metadata,
    state: r.status,
    envdVersion: ENVD_VERSION,
  };
}

function detailJson(r: Live, token: string | undefined, domain: string | null) {
  return { ...listedJson(r), envdAccessToken: token, domain };
}

/**
 * What create and connect answer: enough for the SDK to reach the sandbox (`domain`: the operator's
 * AGENTBOX_E2B_DOMAIN, else null and the SDK keeps its own E2B_DOMAIN).
 */
export function connectionJson(r: SandboxRecord, token: string | undefined, domain: string | null) {
  return {
    sandboxID: r.id,
    templateID: r.template,
    alias: r.template,
    clientID: "agentbox",
    envdVersion: ENVD_VERSION,
    envdAccessToken: token,
    trafficAccessToken: token,
    domain,
  };
}

interface CreateBody {
  templateID?: string;
  timeout?: number;
  metadata?: Record<string, string>;
  envVars?: Record<string, string>;
  autoPause?: boolean;
}

interface IdParams {
  sandboxID: string;
}

export function checkedSeconds(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) throw invalid(`'${name}' must be a whole number of seconds`);
  return value;
}

function stringMap(value: unknown, name: string): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value) || Object.values(value).some((v) => typeof v !== "string"))
    throw invalid(`'${name}' must be an object of strings`);
  return value as Record<string, string>;
}

/** `metadata=k1%3Dv1%26k2%3Dv2` (the SDKs' encoding) as key/value pairs. */
function metadataFilter(raw: unknown): [string, string][] {
  if (typeof raw !== "string" || raw === "") return [];
  const pairs = [...new URLSearchParams(raw)];
  if (pairs.length > MAX_METADATA_FILTERS) throw invalid(`At most ${MAX_METADATA_FILTERS} metadata filters`);
  for (const [k] of pairs) if (!METADATA_FILTER_KEY.test(k)) throw invalid(`'${k.slice(0, 80)}' is not a metadata key to filter on`);
  return pairs;
}

function states(raw: unknown): ("running" | "paused")[] {
  const given = (Array.isArray(raw) ? raw.join(",") : typeof raw === "string" ? raw : "").split(",").filter(Boolean);
  if (given.length === 0) return ["running", "paused"];
  for (const s of given) if (s !== "running" && s !== "paused") throw invalid(`'state' must be running or paused, not '${s.slice(0, 40)}'`);
  return [...new Set(given)] as ("running" | "paused")[];
}

export const controlRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  installControlErrors(app);
  // What E2B has and this service does not map (templates, snapshots, volumes, ...): said so, not a
  // bare 404, which the SDKs would report as a missing sandbox.
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?", 1)[0] ?? "";
    reply.status(501).send({ code: 501, message: `${request.method} ${path} is not supported by this E2B-compatible API (docs/e2b.md)` });
  });
  const { sandbox } = services;
  const domain = services.config.e2bDomain ?? null;
  const lifecycle = services.sandboxes.lifecycle;

  /** The caller's snapshot of that id, if there is one. */
  const snapshotOf = async (tenantId: string, id: string) => {
    try {
      return await lifecycle.getSnapshot(tenantId, id);
    } catch (err) {
      if (err instanceof ApiError && err.code === "snapshot_not_found") return undefined;
      throw err;
    }
  };

  /** A sandbox that is running or paused (an ended one is gone, as in E2B). */
  const live = (caller: Caller, id: string): Live => {
    const r = services.sandboxes.liveRecord(caller.tenantId, id);
    if (!r || !isLive(r)) throw sandboxNotFound(id);
    return r;
  };

  const create = async (request: FastifyRequest<{ Body: CreateBody | undefined }>) => {
    const body = request.body ?? {};
    if (typeof body !== "object" || Array.isArray(body)) throw invalid("The body must be a JSON object");
    const template = body.templateID;
    if (template !== undefined && typeof template !== "string") throw invalid("'templateID' must be a string");
    // A snapshot's id names the snapshot to start from (the SDKs' Sandbox.create(snapshotId)).
    const named = template === undefined || DEFAULT_TEMPLATES.has(template) ? undefined : template;
    const snapshotId = named === undefined ? undefined : (await snapshotOf(request.apiKey.tenantId, named))?.id;
    return sandbox.createSandbox(request.apiKey, {
      template: snapshotId ? undefined : named,
      snapshotId,
      timeoutS: checkedSeconds(body.timeout, "timeout"),
      metadata: stringMap(body.metadata, "metadata"),
      envVars: stringMap(body.envVars, "envVars"),
      onTimeout: body.autoPause === true ? "pause" : undefined,
    });
  };
  for (const url of ["/sandboxes", "/v2/sandboxes"]) {
    app.post<{ Body: CreateBody | undefined }>(url, async (request, reply) => {
      const record = await create(request);
      return reply.status(201).send(connectionJson(record, accessToken(request), domain));
    });
  }

  const list = async (caller: Caller, query: Record<string, unknown>): Promise<Live[]> => {
    const metadata = metadataFilter(query.metadata);
    const all: Live[] = [];
    for (const status of states(query.state)) {
      const found = await sandbox.listSandboxes(caller, services.config.maxSandboxes + 1000, 0, { status, metadata });
      all.push(...found.sandboxes.filter(isLive));
    }
    return all.sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.id.localeCompare(b.id));
  };

  // The first API: the running ones, unpaged.
  app.get<{ Querystring: Record<string, unknown> }>("/sandboxes", async (request) =>
    (await list(request.apiKey, { ...request.query, state: "running" })).map(listedJson),
  );

  // The SDKs' list: filtered by metadata and state, paged by `limit` and an opaque `nextToken` (an offset here).
  app.get<{ Querystring: Record<string, unknown> }>("/v2/sandboxes", async (request, reply) => {
    const all = await list(request.apiKey, request.query);
    if (request.query.order === "desc") all.reverse();
    return paged(all, request.query, reply).map(listedJson);
  });

  app.get<{ Params: IdParams }>("/sandboxes/:sandboxID", async (request) =>
    detailJson(live(request.apiKey, request.params.sandboxID), accessToken(request), domain),
  );

  app.delete<{ Params: IdParams }>("/sandboxes/:sandboxID", async (request, reply) => {
    live(request.apiKey, request.params.sandboxID);
    await sandbox.killSandbox(request.apiKey, request.params.sandboxID);
    return reply.status(204).send();
  });

  app.post<{ Params: IdParams; Body: { timeout?: number } | undefined }>("/sandboxes/:sandboxID/timeout", async (request, reply) => {
    const timeout = checkedSeconds(request.body?.timeout, "timeout");
    if (timeout === undefined) throw invalid("'timeout' is required");
    live(request.apiKey, request.params.sandboxID);
    await sandbox.setSandboxTimeout(request.apiKey, request.params.sandboxID, timeout);
    return reply.status(204).send();
  });

  // No history is kept: one sample, now (CPU since the previous sample, memory in use; disk figures unknown).
  app.get<{ Params: IdParams }>("/sandboxes/:sandboxID/metrics", async (request) => {
    const r = live(request.apiKey, request.params.sandboxID);
    if (r.status !== "running") return [];
    const u = await sandbox.usage(request.apiKey, r.id);
    const now = new Date().toISOString();
    const point = { timestamp: now, timestampUnix: Math.floor(Date.now() / 1000), cpuCount: r.cpuCount, cpuUsedPct: u.cpuPercent };
    return [{ ...point, memUsed: u.memoryBytes, memTotal: u.memoryTotalMb * 2 ** 20, diskUsed: 0, diskTotal: 0 }];
  });

  app.post<{ Params: IdParams }>("/sandboxes/:sandboxID/pause", async (request, reply) => {
    const r = live(request.apiKey, request.params.sandboxID);
    if (r.status === "paused") throw new ApiError("conflict", `Sandbox '${r.id}' is already paused`);
    await lifecycle.pause(request.apiKey.tenantId, r.id);
    return reply.status(204).send();
  });

  /** Resumes a paused sandbox; a timeout given extends its life (never shortens it). */
  const connect = async (request: FastifyRequest<{ Params: IdParams; Body: { timeout?: number } | undefined }>) => {
    const timeout = checkedSeconds(request.body?.timeout, "timeout");
    let r: SandboxRecord = live(request.apiKey, request.params.sandboxID);
    const resumed = r.status === "paused";
    if (resumed) r = (await lifecycle.resume(request.apiKey.tenantId, r.id)).record;
    if (timeout !== undefined && Date.parse(r.timeoutAt) < Date.now() + timeout * 1000)
      r = await sandbox.setSandboxTimeout(request.apiKey, r.id, timeout);
    return { record: r, resumed };
  };
  for (const url of ["/sandboxes/:sandboxID/connect", "/v2/sandboxes/:sandboxID/connect"]) {
    app.post<{ Params: IdParams; Body: { timeout?: number } | undefined }>(url, async (request, reply) => {
      const { record, resumed } = await connect(request);
      return reply.status(resumed ? 201 : 200).send(connectionJson(record, accessToken(request), domain));
    });
  }
  app.post<{ Params: IdParams; Body: { timeout?: number } | undefined }>("/sandboxes/:sandboxID/resume", async (request, reply) => {
    const r = live(request.apiKey, request.params.sandboxID);
    if (r.status !== "paused") throw new ApiError("conflict", `Sandbox '${r.id}' is not paused`);
    const { record } = await connect(request);
    return reply.status(201).send(connectionJson(record, accessToken(request), domain));
  });
};
