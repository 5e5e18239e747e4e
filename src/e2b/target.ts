// Which sandbox an in-sandbox E2B request is for: with E2B_SANDBOX_URL set, the SDKs send every
// such request to that one URL and name the sandbox in the E2b-Sandbox-Id header. One that has
// ended is not found, as in E2B (whose SDKs then say the sandbox is not running any more).
import type { FastifyRequest } from "fastify";
import { invalid, sandboxNotFound } from "../errors.js";
import type { SandboxManager } from "../sandbox/manager.js";

const ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The id in E2b-Sandbox-Id, as given. */
export function sandboxIdOf(request: FastifyRequest): string {
  const v = request.headers["e2b-sandbox-id"];
  const id = (Array.isArray(v) ? v[0] : v)?.trim();
  if (!id || !ID.test(id)) throw invalid("Missing or malformed E2b-Sandbox-Id header; set E2B_SANDBOX_URL to this service's /e2b");
  return id;
}

/** What resolves a request's sandbox: the caller's own, running or paused, else sandbox_not_found. */
export function targetResolver(sandboxes: Pick<SandboxManager, "liveRecord">): (request: FastifyRequest) => string {
  return (request) => {
    const id = sandboxIdOf(request);
    if (!sandboxes.liveRecord(request.apiKey.tenantId, id)) throw sandboxNotFound(id);
    return id;
  };
}
