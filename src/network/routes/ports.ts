// Ports → URLs: GET /sandboxes/{id}/host/{port} → {url}; POST /sandboxes/{id}/ports/{port}/share
// → a signed link; and the proxy itself, /sandboxes/{id}/ports/{port}/... (HTTP requests and
// WebSocket upgrades, streamed both ways to 127.0.0.1:{port} inside the sandbox). Access: the
// owner's API key, or a share token as the path segment `_share/{token}` (see auth.ts). Every
// relayed connection is held under the key it came with (for a share link, the key that made the
// link): revoking the key cuts it.
import http from "node:http";
import type net from "node:net";
import type { Duplex } from "node:stream";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";
import { BadAnswer, checkAnswerHead, reasonPhrase, rewrittenAnswerHead, sendHeadNow } from "../../common/answer-head.js";
import { isInternalHeader } from "../../common/internal-headers.js";
import { ApiError, invalid } from "../../errors.js";
import { readUntil } from "../read-until.js";
import type { NetworkService } from "../service.js";
import type { ApiKeys } from "../../tenancy/key-directory.js";
import { bearerToken } from "../../api/auth.js";
import { type Holder, holdUntilClosed, type OpenRequests } from "../../api/open-requests.js";
import { errors } from "../../api/schemas/common.js";
import { HostUrl, PortParams, ShareBody, ShareResponse } from "../schemas.js";

/** The proxied path: which sandbox and port, the share token if any, what to ask the sandbox for. */
const PORT_PATH = /^(?:\/v1\/agents)?\/sandboxes\/([^/?]{1,128})\/ports\/(\d{1,5})(?:\/_share\/([^/?]{1,2100}))?(\/[^?]*)?(\?.*)?$/;

/** Headers that belong to one hop, or to us: never passed on. */
const HOP = new Set([
  "authorization",
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);

/** The longest head of a sandbox's answer relayed (node's parser fails a longer one: a 502). */
const MAX_HEAD_BYTES = 64 * 1024;
/** How long a sandbox's answer's head may take from its first byte to its end (a slow drip is a 502). */
export const HEAD_TIME_MS = 10_000;
/** How long a sandbox's server may take to answer a WebSocket (Upgrade) handshake, head whole. */
const UPGRADE_HEAD_MS = 30_000;

/**
 * What the sandbox serves runs in the browser as an opaque origin of its own (CSP sandbox, without
 * allow-same-origin): its scripts cannot read this service's pages or storage (the dashboard's
 * key), though they share its host name. Popups it opens stay sandboxed too.
 */
const RELAYED_CSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";

interface Target {
  sandboxId: string;
  port: number;
  token?: string;
  path: string;
}

function parseTarget(url: string): Target | undefined {
  const m = PORT_PATH.exec(url);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { sandboxId: decodeURIComponent(m[1] as string), port, token: m[3], path: `${m[4] ?? "/"}${m[5] ?? ""}` };
}

/**
 * Who reaches the target: the share token's tenant and key (a link works only while the key that
 * made it does), else the API key's; throws 401 otherwise.
 */
async function holderFor(network: NetworkService, keys: ApiKeys, target: Target, key: Holder | undefined): Promise<Holder> {
  if (target.token !== undefined) {
    const claim = network.shareClaim(target.token, target.sandboxId, target.port);
    if (!claim || !(await keys.isActive(claim.keyId))) throw new ApiError("unauthorized", "This share link is invalid or has expired");
    return claim;
  }
  if (!key) throw new ApiError("unauthorized", "Missing Authorization header; send 'Authorization: Bearer <API key>' or use a share link");
  return key;
}

const holderOf = (key: { id: string; tenantId: string } | undefined): Holder | undefined =>
  key && { keyId: key.id, tenantId: key.tenantId };

/**
 * The sandbox's answer's head as it goes to the client: its status, a reason phrase of allowed bytes
 * (reasonPhrase()), its headers but the hop-by-hop ones and its own CSP, then ours. Throws BadAnswer
 * for a head that cannot be relayed (checkAnswerHead()).
 */
function relayedHead(up: http.IncomingMessage): { status: number; reason: string; headers: string[] } {
  const headers: string[] = [];
  const raw = up.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const lower = (raw[i] as string).toLowerCase();
    if (!HOP.has(lower) && lower !== "content-security-policy") headers.push(raw[i] as string, raw[i + 1] as string);
  }
  headers.push("content-security-policy", RELAYED_CSP);
  checkAnswerHead(up.statusCode, headers);
  const status = up.statusCode as number;
  return { status, reason: reasonPhrase(status, up.statusMessage), headers };
}

function forwardHeaders(headers: http.IncomingHttpHeaders, port: number, host: string | undefined): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  // The cluster's channel headers (a forwarded request's node signature and origin host) stop here.
  for (const [k, v] of Object.entries(headers)) if (!HOP.has(k) && !isInternalHeader(k) && v !== undefined) out[k] = v;
  out.host = `localhost:${port}`;
  if (host) out["x-forwarded-host"] = host;
  return out;
}

function baseUrl(request: FastifyRequest, configured: string | undefined): string {
  return configured ?? `${request.protocol}://${request.host}`;
}

function parsePort(raw: string): number {
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalid("'port' must be 1..65535");
  return port;
}

export const portRoutes: FastifyPluginAsyncTypebox<{
  network: NetworkService;
  keys: ApiKeys;
  open: OpenRequests;
  publicUrl: string | undefined;
}> = async (app, { network, keys, open, publicUrl }) => {
  const tags = ["ports"];

  app.get(
    "/sandboxes/:sandbox_id/host/:port",
    {
      schema: {
        tags,
        summary: "The URL of a port of the sandbox (reached with your API key, or via a share link)",
        params: PortParams,
        response: { 200: HostUrl, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { sandbox_id: id } = request.params;
      const port = parsePort(request.params.port);
      await network.checkRunning(request.apiKey.tenantId, id);
      return { url: `${baseUrl(request, publicUrl)}/v1/agents/sandboxes/${encodeURIComponent(id)}/ports/${port}/` };
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/ports/:port/share",
    {
      schema: {
        tags,
        summary: "A link to a port of the sandbox that works without the API key until it expires",
        params: PortParams,
        body: ShareBody,
        response: { 200: ShareResponse, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { sandbox_id: id } = request.params;
      const port = parsePort(request.params.port);
      const { token, expiresAt } = await network.share(request.apiKey.tenantId, request.apiKey.id, id, port, request.body.expires_in);
      return {
        url: `${baseUrl(request, publicUrl)}/v1/agents/sandboxes/${encodeURIComponent(id)}/ports/${port}/_share/${token}/`,
        expires_at: expiresAt.toISOString(),
      };
    },
  );

  const proxy = async (request: FastifyRequest, reply: import("fastify").FastifyReply) => {
    const target = parseTarget(request.url);
    if (!target) throw invalid("Malformed port URL");
    const holder = await holderFor(network, keys, target, holderOf(request.apiKey as typeof request.apiKey | undefined));
    const sock = await network.openPort(holder.tenantId, target.sandboxId, target.port);
    reply.hijack();
    const res = reply.raw;
    holdUntilClosed(
      open,
      holder,
      res,
      () => {
        res.destroy();
        sock.destroy();
      },
      (id) => keys.isActive(id),
    );
    /**
     * The client's answer cut, once what was written of it has gone out: its head is held in a cork
     * until the next tick, and a connection destroyed now would drop it (the client would see no
     * answer at all, as if the service had not answered).
     */
    const cut = () => setImmediate(() => res.destroy());
    /** The answer to the client when the sandbox's own fails (502 JSON), or its connection cut once a head has gone out. */
    const failed = (why: string) => {
      // Answered already (a 502 for a bad head, then the upstream's own error): nothing more to do.
      if (res.writableEnded) return;
      if (res.headersSent || res.destroyed) return cut();
      const body = JSON.stringify({ error: { code: "upstream_error", message: `The sandbox's port ${target.port} failed: ${why}` } });
      res.writeHead(502, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
      sock.destroy();
    };
    const upstream = http.request({
      method: request.method,
      path: target.path,
      headers: forwardHeaders(request.headers, target.port, request.headers.host),
      createConnection: () => sock,
      // Bounds on the sandbox's head: its size here (node's parser fails a longer one), its time below.
      maxHeaderSize: MAX_HEAD_BYTES,
    });
    // The head, once its first byte came, must come whole in time (a server that drips it holds the connection otherwise).
    let dripping: NodeJS.Timeout | undefined;
    const timeHead = () =>
      sock.once("data", () => {
        if (!res.headersSent) dripping = setTimeout(() => upstream.destroy(new Error("its answer's head was too slow")), HEAD_TIME_MS);
      });
    timeHead();
    // After a 1xx (100 Continue) the final answer may be a while (the server works): timed from its own first byte.
    upstream.on("information", () => {
      clearTimeout(dripping);
      timeHead();
    });
    res.once("close", () => clearTimeout(dripping));
    // The broker hands the connection over paused (its first line was read off it): flowing again once the client listens.
    upstream.once("socket", (s) => s.resume());
    upstream.on("response", (up) => {
      clearTimeout(dripping);
      up.on("error", cut);
      // The sandbox's answer is untrusted: checked before writeHead, which would throw in this listener (and end the process).
      let head: { status: number; reason: string; headers: string[] };
      try {
        head = relayedHead(up);
      } catch (err) {
        up.destroy();
        return failed(err instanceof BadAnswer ? `its answer was malformed: ${err.message}` : "its answer could not be relayed");
      }
      try {
        res.writeHead(head.status, head.reason, head.headers);
        // Sent at once: an answer that goes bad mid-body is then a cut answer after its head, which
        // a client (or the node that forwarded the request) tells from a service that did not answer.
        sendHeadNow(res);
      } catch {
        // Not expected once checked: still this request's failure only, never the process's.
        up.destroy();
        return failed("its answer could not be relayed");
      }
      up.pipe(res);
    });
    upstream.on("error", (err) => failed(err.message));
    res.on("error", () => sock.destroy());
    res.on("close", () => {
      if (!res.writableFinished) sock.destroy();
    });
    request.raw.pipe(upstream);
  };

  const schema = {
    tags,
    summary: "The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways",
    params: Type.Object({ sandbox_id: Type.String(), port: Type.String({ pattern: "^[0-9]{1,5}$" }), "*": Type.Optional(Type.String()) }),
  };
  const methods: ("GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS")[] = [
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "PATCH",
    "DELETE",
    "OPTIONS",
  ];
  // In a context of its own: bodies of proxied requests are streamed to the sandbox as they are, never parsed here.
  await app.register(async (proxied) => {
    proxied.removeAllContentTypeParsers();
    proxied.addContentTypeParser("*", (_request, _payload, done) => done(null));
    proxied.route({ method: methods, url: "/sandboxes/:sandbox_id/ports/:port", schema, handler: proxy });
    proxied.route({ method: methods, url: "/sandboxes/:sandbox_id/ports/:port/*", schema, handler: proxy });
  });
};

function refuse(socket: Duplex, err: unknown): void {
  const api = err instanceof ApiError ? err : new ApiError("internal_error", "Internal error");
  const body = JSON.stringify({ error: { code: api.code, message: api.message } });
  socket.end(
    `HTTP/1.1 ${api.status} ${http.STATUS_CODES[api.status] ?? "Error"}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  // HTTP sockets are half-open: one whose client never closes would otherwise be held for good.
  setTimeout(() => socket.destroy(), REFUSE_LINGER_MS).unref();
}

/** How long a refused upgrade's socket stays open for its client to read the answer. */
const REFUSE_LINGER_MS = 5000;

/**
 * WebSocket (any Upgrade) requests to port URLs: authenticated like the HTTP route, then the
 * request goes to the sandbox's port as it came (minus our credentials) and bytes flow both ways.
 * Upgrades to any other path are refused.
 */
export function installPortUpgrades(
  server: http.Server,
  network: NetworkService,
  keys: ApiKeys,
  open: OpenRequests,
  rootAliases: boolean,
  /** Maps a host-named port URL (E2B's {port}-{id}.{domain}) onto its path form, as the HTTP routes see it. */
  rewrite?: (req: http.IncomingMessage) => string,
  /** Takes an upgrade elsewhere when it says so (in a cluster: relayed to the node that runs the sandbox). */
  divert?: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => Promise<boolean>,
): void {
  server.on("upgrade", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    void (async () => {
      // Rewritten first (once), so that a host-named port URL is relayed in its path form too.
      const url = rewrite ? rewrite(req) : (req.url ?? "");
      req.url = url;
      if (divert && (await divert(req, socket, head))) return;
      const target = parseTarget(url);
      if (!target || (!rootAliases && !url.startsWith("/v1/agents/"))) throw new ApiError("not_found", "No WebSocket endpoint here");
      let key: Holder | undefined;
      if (target.token === undefined) {
        const token = bearerToken(req.headers.authorization);
        key = holderOf(token ? await keys.verify(token) : undefined);
        if (!key)
          throw new ApiError("unauthorized", "Missing or invalid API key; send 'Authorization: Bearer <API key>' or use a share link");
      }
      const holder = await holderFor(network, keys, target, key);
      const sock: net.Socket = await network.openPort(holder.tenantId, target.sandboxId, target.port);
      if (socket.destroyed) return void sock.destroy();
      holdUntilClosed(
        open,
        holder,
        sock,
        () => {
          socket.destroy();
          sock.destroy();
        },
        (id) => keys.isActive(id),
      );
      const lines = [`${req.method} ${target.path} HTTP/1.1`, `host: localhost:${target.port}`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i] as string;
        const lower = name.toLowerCase();
        if (lower === "authorization" || lower === "host" || lower.startsWith("proxy-") || isInternalHeader(lower)) continue;
        lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
      }
      sock.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length) sock.write(head);
      sock.on("error", () => socket.destroy());
      socket.on("close", () => sock.destroy());
      const cutClient = () => socket.destroy();
      sock.on("close", cutClient);
      socket.pipe(sock);
      // The sandbox's answer to the handshake is untrusted too: its head is read (bounded in size and
      // time), checked and written again before anything goes to the client; a bad one is a 502.
      // Then the bytes flow as they come.
      const reading = readUntil(sock, "\r\n\r\n", { max: MAX_HEAD_BYTES, timeoutMs: UPGRADE_HEAD_MS });
      sock.resume();
      const answer = await reading;
      if (socket.destroyed) return void sock.destroy();
      let answerHead: string;
      try {
        if (answer === undefined) throw new BadAnswer("it closed, or did not answer in time");
        if (answer === "too long") throw new BadAnswer("its answer's head is too long");
        answerHead = rewrittenAnswerHead(answer.before.toString("latin1"));
      } catch (err) {
        // The client's connection stays for the 502 (refuse() ends it).
        sock.off("close", cutClient);
        socket.unpipe(sock);
        sock.destroy();
        const why = err instanceof BadAnswer ? err.message : "its answer could not be relayed";
        throw new ApiError("upstream_error", `The sandbox's port ${target.port} failed: ${why}`);
      }
      socket.write(Buffer.from(answerHead, "latin1"));
      if (typeof answer === "object" && answer.after.length) socket.write(answer.after);
      sock.pipe(socket);
    })().catch((err) => refuse(socket, err));
  });
}
