// Authentication: every request except health, metrics, the API documents and share links of ports needs
// `Authorization: Bearer <key>` (routes whose clients carry it in their own headers, such as the
// E2B-compatible API under /e2b, hand in how to read it: KeyHeaders). Under /v1/admin only the operator's admin key is accepted (a tenant key there is
// 401, and is not even looked up); everywhere else only a tenant's API key is, whose record (and so
// its tenant) is attached to the request. The admin key is no tenant's key.
// A request that stays open (a stream, a transfer) is held under its key (`reply.holdOpen`), so
// that revoking the key ends it too.
import type { IncomingHttpHeaders } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";
import type { ApiKeyRecord } from "../common/api-key.js";
import { holdUntilClosed, type OpenRequests } from "./open-requests.js";

declare module "fastify" {
  interface FastifyRequest {
    apiKey: ApiKeyRecord;
  }
  interface FastifyReply {
    /**
     * Keeps the request under its API key until the response closes: revoking the key calls `end`
     * (by default the connection is dropped). Call it in handlers of requests that may last.
     */
    holdOpen(end?: (why?: ApiError) => void): void;
  }
}

// `/` and `/assets/` are the dashboard's static files: the page sends the key on its own API calls.
const PUBLIC = [/^\/health$/, /^\/metrics$/, /^\/openapi\.json$/, /^\/docs(\/|$)/, /^\/$/, /^\/assets\/[^/]+$/];
const ADMIN = /^\/v1\/admin(\/|$)/;
/** A share link of a sandbox port: its signed token stands in for the key, checked by the route (src/network/routes/ports.ts). */
const SHARED_PORT = /^(\/v1\/agents)?\/sandboxes\/[^/]+\/ports\/\d+\/_share\//;
const BEARER = /^Bearer +([\x21-\x7e]{1,512})$/;

/** The key of an `Authorization: Bearer <key>` header (surrounding spaces ignored); undefined when there is none or it is malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header.trim())?.[1];
}

/** Routes whose clients send the API key in headers of their own: checked the same way as a bearer key. */
export interface KeyHeaders {
  path: RegExp;
  /** The key the request carries, if any. */
  token: (headers: IncomingHttpHeaders) => string | undefined;
  /** The 401's message when it carries none. */
  missing: string;
}

/** What the door asks of the API keys (the tenancy area's key directory, or a wrapper of it). */
export interface KeyVerifier {
  /** The key's record, undefined for an unknown or revoked key (may throw an ApiError to refuse it otherwise). */
  verify(token: string): Promise<ApiKeyRecord | undefined>;
  isActive(id: string): Promise<boolean>;
}

/** What the door asks of the operator's admin key. */
export interface AdminVerifier {
  verify(token: string): boolean | Promise<boolean>;
}

export function installAuth(
  app: FastifyInstance,
  keys: KeyVerifier,
  admin: AdminVerifier,
  open: OpenRequests,
  keyHeaders: KeyHeaders[] = [],
): void {
  app.decorateRequest("apiKey", undefined as unknown as ApiKeyRecord);
  app.decorateReply("holdOpen", function (this: FastifyReply, end?: (why?: ApiError) => void) {
    const key = this.request.apiKey as ApiKeyRecord | undefined;
    if (!key) return;
    const raw = this.raw;
    holdUntilClosed(open, { keyId: key.id, tenantId: key.tenantId }, raw, end ?? (() => raw.destroy()), (id) => keys.isActive(id));
  });
  app.addHook("onRequest", async (request: FastifyRequest) => {
    const path = request.url.split("?", 1)[0] as string;
    if (PUBLIC.some((re) => re.test(path))) return;
    // E.g. the E2B-compatible API (src/e2b/auth.ts): the key travels in E2B's own headers, checked the same way.
    const own = keyHeaders.find((h) => h.path.test(path));
    if (own) {
      const token = own.token(request.headers);
      if (!token) throw new ApiError("unauthorized", own.missing);
      const key = await keys.verify(token);
      if (!key) throw new ApiError("unauthorized", "Invalid or revoked API key");
      request.apiKey = key;
      return;
    }
    const header = request.headers.authorization;
    if (!header && SHARED_PORT.test(path) && request.routeOptions.url?.endsWith("/ports/:port/*")) return;
    if (!header) throw new ApiError("unauthorized", "Missing Authorization header; send 'Authorization: Bearer <API key>'");
    const token = bearerToken(header);
    if (!token) throw new ApiError("unauthorized", "Malformed Authorization header; expected 'Bearer <API key>'");
    // By the matched route as well as the raw path: the router decodes percent-escapes the raw path still has.
    if (ADMIN.test(path) || ADMIN.test(request.routeOptions.url ?? "")) {
      if (!(await admin.verify(token))) throw new ApiError("unauthorized", "This route needs the admin key");
      return;
    }
    const key = await keys.verify(token);
    if (!key) throw new ApiError("unauthorized", "Invalid or revoked API key");
    request.apiKey = key;
  });
}
