// Host-name routing of E2B's URLs, when the operator sets a domain (AGENTBOX_E2B_DOMAIN): without
// E2B_SANDBOX_URL the SDKs reach a sandbox's port at https://{port}-{sandboxID}.{domain} (and the
// control API, without E2B_API_URL, at https://api.{domain}). Before routing, such a request is
// rewritten onto the route that already serves it, so it is authenticated and handled exactly as
// its path form: envd's port (49983) and the code interpreter's (49999) onto /e2b with the sandbox
// named by the host, every other port onto the port relay /v1/agents/sandboxes/{id}/ports/{port}.
import type { IncomingMessage } from "node:http";
import { E2B_PREFIX, fromE2bKeyFormat } from "./auth.js";

/** envd's port in E2B's sandboxes. */
export const ENVD_PORT = 49983;
/** The code interpreter's port (JUPYTER_PORT in @e2b/code-interpreter, 49999 in the Python one too). */
export const INTERPRETER_PORT = 49999;

/** `{port}-{sandboxID}`: one DNS label, so a sandbox id here (a UUID) fits it as it is. */
const SANDBOX_LABEL = /^(\d{1,5})-([a-z0-9][a-z0-9-]{0,56})$/;
/** A domain as the operator may set it: host names, optionally a port (for a TLS front on another port). */
const DOMAIN = /^(?=.{1,253}(:|$))[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$/;
/** E2B's in-sandbox credentials: on the port relay they stand for the key and never reach the sandbox. */
const E2B_TOKENS = ["x-access-token", "e2b-traffic-access-token"];

/** The operator's domain, checked (lower case); throws on one that no host name could match. */
export function e2bDomain(raw: string | undefined): string | undefined {
  const domain = raw?.trim().toLowerCase().replace(/\.$/, "");
  if (!domain) return undefined;
  if (!DOMAIN.test(domain)) throw new Error(`AGENTBOX_E2B_DOMAIN must be a domain name (optionally with ':port'), got '${raw}'`);
  return domain;
}

const withoutPort = (host: string) => host.replace(/:\d{1,5}$/, "");

/** Removes a header from the parsed and the raw list (the WebSocket relay forwards the raw one). */
function dropHeader(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  delete req.headers[name];
  for (let i = req.rawHeaders.length - 2; i >= 0; i -= 2)
    if ((req.rawHeaders[i] as string).toLowerCase() === name) req.rawHeaders.splice(i, 2);
  return Array.isArray(v) ? v[0] : v;
}

/** Whether a request is addressed by one of the domain's host names (and so is rewritten before routing). */
export function e2bHostMatcher(domain: string): (req: IncomingMessage) => boolean {
  const suffix = `.${withoutPort(domain)}`;
  return (req) => {
    const host = req.headers.host;
    return host !== undefined && withoutPort(host.toLowerCase()).endsWith(suffix);
  };
}

/**
 * The rewriter for `domain`: the URL a request should be routed by (its own when its Host is not
 * one of the domain's). It also names the sandbox (E2b-Sandbox-Id, from the host, which wins) and,
 * for the port relay, turns an E2B access token into the `Authorization` the relay reads.
 */
export function e2bHostRewriter(domain: string): (req: IncomingMessage) => string {
  const base = withoutPort(domain);
  const suffix = `.${base}`;
  return (req) => {
    const url = req.url ?? "/";
    const host = req.headers.host;
    if (!host || !url.startsWith("/")) return url;
    const name = withoutPort(host.toLowerCase());
    if (!name.endsWith(suffix)) return url;
    const label = name.slice(0, -suffix.length);
    if (label === "api") return `${E2B_PREFIX}${url}`;
    const m = SANDBOX_LABEL.exec(label);
    const port = Number(m?.[1]);
    if (!m || port < 1 || port > 65535) return url;
    const id = m[2] as string;
    if (port === ENVD_PORT || port === INTERPRETER_PORT) {
      req.headers["e2b-sandbox-id"] = id;
      return `${E2B_PREFIX}${url}`;
    }
    let token: string | undefined;
    for (const header of E2B_TOKENS) token = dropHeader(req, header)?.trim() || token;
    if (token && !req.headers.authorization) {
      req.headers.authorization = `Bearer ${fromE2bKeyFormat(token)}`;
      // In the raw list too: a cluster relays a WebSocket to the sandbox's node with the raw headers.
      req.rawHeaders.push("authorization", req.headers.authorization);
    }
    return `/v1/agents/sandboxes/${id}/ports/${port}${url}`;
  };
}
