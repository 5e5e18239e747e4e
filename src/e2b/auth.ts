// Where the E2B SDKs put the API key: `X-API-KEY` on the control API; on in-sandbox requests the
// sandbox's access token (`X-Access-Token`, or `E2B-Traffic-Access-Token` on the code
// interpreter's context calls), which this service hands out as the caller's own API key, so
// every E2B request authenticates exactly like a native one (same key, tenant, quotas).
import type { IncomingHttpHeaders } from "node:http";
import type { KeyHeaders } from "../api/auth.js";

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

const HEX_FORM = /^e2b_((?:[0-9a-f]{2})+)$/i;

/**
 * A key in E2B's own format, `e2b_<hex>`, is this service's key hex-encoded: E2B's Python SDK
 * refuses a key of any other shape, so `e2b_` + hex(key) lets it carry one (docs/e2b.md).
 */
export function fromE2bKeyFormat(token: string): string {
  const hex = HEX_FORM.exec(token)?.[1];
  if (!hex) return token;
  const decoded = Buffer.from(hex, "hex").toString("utf8");
  return TOKEN.test(decoded) ? decoded : token;
}

/** The API key an E2B request carries, if any (envd's `Authorization: Basic <user>:` names a user, not a key). */
export function e2bToken(headers: IncomingHttpHeaders): string | undefined {
  const token =
    header(headers, "x-api-key") ??
    header(headers, "x-access-token") ??
    header(headers, "e2b-traffic-access-token") ??
    BEARER.exec(headers.authorization?.trim() ?? "")?.[1];
  return token === undefined ? undefined : fromE2bKeyFormat(token);
}

/** How the service's authentication reads the key of a request to the E2B-compatible API. */
export const E2B_KEY_HEADERS: KeyHeaders = {
  path: E2B_PATH,
  token: e2bToken,
  missing: "Missing API key; send 'X-API-KEY: <API key>' (E2B_API_KEY)",
};
