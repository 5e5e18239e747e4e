// Authentication: every request except health, metrics and the API documents needs
// `Authorization: Bearer <key>`; the key's record (and so its tenant) is attached to the request.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";
import type { ApiKeyRecord, KeyStore } from "../store/keys.js";

declare module "fastify" {
  interface FastifyRequest {
    apiKey: ApiKeyRecord;
  }
}

const PUBLIC = [/^\/health$/, /^\/metrics$/, /^\/openapi\.json$/, /^\/docs(\/|$)/];
const BEARER = /^Bearer +([\x21-\x7e]{1,512})$/;

export function installAuth(app: FastifyInstance, keys: KeyStore): void {
  app.decorateRequest("apiKey", undefined as unknown as ApiKeyRecord);
  app.addHook("onRequest", async (request: FastifyRequest) => {
    const path = request.url.split("?", 1)[0] as string;
    if (PUBLIC.some((re) => re.test(path))) return;
    const header = request.headers.authorization;
    if (!header) throw new ApiError("unauthorized", "Missing Authorization header; send 'Authorization: Bearer <API key>'");
    const match = BEARER.exec(header.trim());
    if (!match) throw new ApiError("unauthorized", "Malformed Authorization header; expected 'Bearer <API key>'");
    const key = keys.verify(match[1] as string);
    if (!key) throw new ApiError("unauthorized", "Invalid or revoked API key");
    request.apiKey = key;
  });
}
