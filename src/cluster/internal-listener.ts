// The nodes' own listener: the internal routes (/v1/internal/*: template copies, a drain's
// hand-over) are answered on a port of their own (AGENTBOX_INTERNAL_PORT, bound to
// AGENTBOX_INTERNAL_HOST), never on the public one, so that they can be kept to the nodes' private
// network. Every request on it must still carry a node's signature; anything else is 404.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** Answers a request on an internal route (true), or leaves it (false: 404 here). */
export type InternalHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

export const INTERNAL_PREFIX = "/v1/internal/";

function notFound(res: ServerResponse, message = "No such internal route"): void {
  res.writeHead(404, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify({ error: { code: "not_found", message } }));
}

/**
 * The public port's side: /v1/internal/* is 404 there whoever asks (answered before Fastify, whose
 * hooks would ask for a key first); false for any other request.
 */
export function refuseInternal(req: IncomingMessage, res: ServerResponse): boolean {
  if (!(req.url ?? "").startsWith(INTERNAL_PREFIX)) return false;
  notFound(res, "No such route (the nodes' own routes are on their internal listener, AGENTBOX_INTERNAL_PORT)");
  return true;
}

export interface InternalListener {
  /** The port it listens on (AGENTBOX_INTERNAL_PORT, or the free one it was given for 0). */
  readonly port: number;
  /** Sets what answers its requests (until then: 503, the node is starting). */
  serve(handler: InternalHandler): void;
  close(): Promise<void>;
}

/** Listens on `host`:`port` (0: any free port) for the nodes' own routes. */
export async function openInternalListener(host: string, port: number, onError: (err: unknown) => void): Promise<InternalListener> {
  let handler: InternalHandler | undefined;
  const server = http.createServer((req, res) => {
    try {
      if (!handler) {
        res.writeHead(503, { "retry-after": "1" });
        res.end();
      } else if (!(req.url ?? "").startsWith(INTERNAL_PREFIX) || !handler(req, res)) notFound(res);
    } catch (err) {
      // One bad request ends its own connection, never the node.
      onError(err);
      res.destroy();
    }
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", onError);
  return {
    port: (server.address() as AddressInfo).port,
    serve(h) {
      handler = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
