// Which sandbox an in-sandbox E2B request is for: with E2B_SANDBOX_URL set, the SDKs send every
// such request to that one URL and name the sandbox in the E2b-Sandbox-Id header.
import type { FastifyRequest } from "fastify";
import { invalid } from "../errors.js";

const ID = /^[A-Za-z0-9_-]{1,128}$/;

export function sandboxIdOf(request: FastifyRequest): string {
  const v = request.headers["e2b-sandbox-id"];
  const id = (Array.isArray(v) ? v[0] : v)?.trim();
  if (!id || !ID.test(id)) throw invalid("Missing or malformed E2b-Sandbox-Id header; set E2B_SANDBOX_URL to this service's /e2b");
  return id;
}
