// A create's body, read before placement so that a create of a tenant's own template goes to an
// executor that holds its files (and a deployment that asks for GPUs to one that has them free): small JSON bodies only (a create's is a few hundred bytes; any
// other is placed by load alone and streamed as it comes). What was read is given to the node's own
// parser (the create routes' preParsing) or sent on to the executor chosen.
import type { IncomingMessage } from "node:http";
import { PassThrough, type Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { targetOf } from "./targets.js";

/** A deployment's create, whose body says what GPUs it needs (./deployments.ts). */
const DEPLOYMENT_CREATE = "/v1/deployments/create";

/** Largest create body read before placement. */
const PEEK_MAX_BYTES = 64 * 1024;

/** Bodies read before placement, by request: the node's parser reads them from here. */
const bodies = new WeakMap<IncomingMessage, Buffer>();

/** Reads a small JSON body whole (kept for the parser); undefined, and nothing read, for any other. */
export function readCreateBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const length = Number(req.headers["content-length"]);
  const type = String(req.headers["content-type"] ?? "");
  if (!Number.isInteger(length) || length <= 0 || length > PEEK_MAX_BYTES || !type.startsWith("application/json"))
    return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.once("end", () => {
      const body = Buffer.concat(chunks);
      bodies.set(req, body);
      resolve(body);
    });
    req.once("error", reject);
    req.once("aborted", () => reject(new Error("the client went away")));
  });
}

/** The template a create's body names (`template`, or E2B's `templateID`); undefined when none or unreadable. */
export function templateNamed(url: string, body: Buffer): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString("utf8"));
    if (typeof parsed !== "object" || parsed === null) return undefined;
    const name = (parsed as Record<string, unknown>)[url.startsWith("/e2b/") ? "templateID" : "template"];
    return typeof name === "string" && name !== "" ? name : undefined;
  } catch {
    return undefined; // the parser answers it, as it would have
  }
}

/** The create routes parse a body read before placement from memory (the request's own stream is spent). */
export function parseReadBodies(app: FastifyInstance): void {
  const replay = async (request: { raw: IncomingMessage }, _reply: unknown, payload: Readable): Promise<Readable> => {
    const body = bodies.get(request.raw);
    if (!body) return payload;
    const stream = new PassThrough();
    stream.end(body);
    return stream;
  };
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes("POST") || (targetOf("POST", route.url, {}) !== "create" && route.url !== DEPLOYMENT_CREATE)) return;
    const own = route.preParsing === undefined ? [] : Array.isArray(route.preParsing) ? route.preParsing : [route.preParsing];
    route.preParsing = [replay, ...own];
  });
}
