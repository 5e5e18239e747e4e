// E2B's list paging: `limit` (1 to 100, E2B's own page limit) and an opaque `nextToken`, which is
// an offset here; the token of the next page goes in the `x-next-token` header while there is one.
import type { FastifyReply } from "fastify";
import { invalid } from "../errors.js";

export const MAX_PAGE = 100;

/** The page of `all` that `query` asks for; sets `x-next-token` when more follow. */
export function paged<T>(all: T[], query: { limit?: unknown; nextToken?: unknown }, reply: FastifyReply): T[] {
  const limit = query.limit === undefined ? MAX_PAGE : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw invalid(`'limit' must be 1 to ${MAX_PAGE}`);
  const offset = query.nextToken === undefined || query.nextToken === "" ? 0 : Number(query.nextToken);
  if (!Number.isInteger(offset) || offset < 0) throw invalid("'nextToken' is not one this service gave out");
  if (offset + limit < all.length) reply.header("x-next-token", String(offset + limit));
  return all.slice(offset, offset + limit);
}
