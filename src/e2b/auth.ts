// Where the E2B SDKs put the API key: `X-API-KEY` on the control API; on in-sandbox requests the
// sandbox's access token (`X-Access-Token`, or `E2B-Traffic-Access-Token` on the code
// interpreter's context calls), which this service hands out as the caller's own API key, so
// every E2B request authenticates exactly like a native one (same key, tenant, quotas).
import type { IncomingHttpHeaders } from "node:http";

/** The prefix every E2B-compatible route is served under (E2B_API_URL = E2B_SANDBOX_URL = <base>/e2b). */
export const E2B_PREFIX = "/e2b";
export const E2B_PATH = /^\/e2b(\/|$)/;

const TOKEN = /^[\x21-\x7e]{1,512}$/;
const BEARER = /^Bearer +([\x21-\x7e]{1,512})$/;

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  const t = s?.trim();
  return t && TOKEN.test(t) ? t : undefined;
}

/** The API key an E2B request carries, if any (envd's `Authorization: Basic <user>:` names a user, not a key). */
export function e2bToken(headers: IncomingHttpHeaders): string | undefined {
  return (
    header(headers, "x-api-key") ??
    header(headers, "x-access-token") ??
    header(headers, "e2b-traffic-access-token") ??
    BEARER.exec(headers.authorization?.trim() ?? "")?.[1]
  );
}
