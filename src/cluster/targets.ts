// Which sandbox a request is for, as the cluster's routing sees it: the native routes
// (`/v1/agents/sandboxes/{id}...` and the root aliases), the operator's (`/v1/admin/sandboxes/{id}`), the E2B control API's
// (`/e2b/sandboxes/{id}...`, `/e2b/v2/sandboxes/{id}...`) and E2B's in-sandbox calls (envd's
// Connect RPCs, file transfers, the code interpreter), which name their sandbox in the
// E2b-Sandbox-Id header (set from a `{port}-{id}.{domain}` host name before routing). Creates are
// told apart too: they are placed on an executor. Pure, and cheap on the hot path.
import type { IncomingHttpHeaders } from "node:http";

/** A route of one sandbox: its id is group 1. */
const SANDBOX = /^(?:\/v1\/agents|\/v1\/admin|\/e2b(?:\/v2)?)?\/sandboxes\/([^/?#]+)/;
/** The create (and list) routes. */
const CREATE = /^(?:\/v1\/agents|\/e2b(?:\/v2)?)?\/sandboxes\/?$/;
/** E2B's in-sandbox calls, whose sandbox is in this header. */
const E2B_SANDBOX_ID = "e2b-sandbox-id";

export type Target = { sandbox: string } | "create" | undefined;

/** Only these paths can concern a sandbox: every other request passes the cluster by. */
export function mayTarget(url: string): boolean {
  return (
    url.startsWith("/v1/agents/sandboxes") ||
    url.startsWith("/sandboxes") ||
    url.startsWith("/e2b/") ||
    url.startsWith("/v1/admin/sandboxes/")
  );
}

/** The sandbox a request is for, `create` for a create, undefined for neither (or a malformed id). */
export function targetOf(method: string, url: string, headers: IncomingHttpHeaders): Target {
  const path = url.split("?", 1)[0] as string;
  const m = SANDBOX.exec(path);
  if (m) {
    try {
      return { sandbox: decodeURIComponent(m[1] as string) };
    } catch {
      return undefined; // the router answers a malformed path
    }
  }
  if (CREATE.test(path)) return method === "POST" ? "create" : undefined;
  if (!path.startsWith("/e2b/")) return undefined;
  const v = headers[E2B_SANDBOX_ID];
  const id = (Array.isArray(v) ? v[0] : v)?.trim();
  return id ? { sandbox: id } : undefined;
}
