// The internal channel's side of template copies: another node fetching a template's files
// (`GET /v1/internal/templates/{id}/rootfs|home`, signed with AGENTBOX_CLUSTER_SECRET) is answered
// here, before Fastify (no API key: only a node of the cluster may ask), with the stream the
// templates area gives; and the view of the cluster the templates area fetches through.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { ChannelAuth } from "./channel-auth.js";
import type { Membership } from "./membership.js";

const PREFIX = "/v1/internal/";
const COPY = /^\/v1\/internal\/templates\/([^/?#]+)\/(rootfs|home)$/;

/** What the templates area serves (src/templates/service.ts copySource). */
export interface TemplateCopySource {
  copySource(templateId: string, part: "rootfs" | "home"): Promise<Readable | undefined>;
}

function answer(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify({ error: { code, message } }));
}

/** Takes a request on the internal paths (true), or leaves it to Fastify (false). */
export function internalRoutes(
  channel: ChannelAuth,
  source: TemplateCopySource | undefined,
  log: (fields: Record<string, unknown>, msg: string) => void,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = req.url as string;
    if (!url.startsWith(PREFIX)) return false;
    const m = COPY.exec(url);
    if (req.method !== "GET" || !m || !source) {
      answer(res, 404, "not_found", "No such internal route");
      return true;
    }
    if (channel.verify(req.headers, "GET", url) !== "valid") {
      answer(res, 401, "unauthorized", "Internal routes answer only a node of the cluster (a valid node signature)");
      return true;
    }
    const id = decodeURIComponent(m[1] as string);
    const part = m[2] as "rootfs" | "home";
    source.copySource(id, part).then(
      (stream) => {
        if (!stream) return answer(res, 404, "template_not_found", `This node does not hold the ${part} of template '${id}'`);
        res.writeHead(200, { "content-type": part === "rootfs" ? "application/x-tar" : "application/octet-stream" });
        stream.on("error", (err) => {
          log({ err, template_id: id }, "template copy: sending failed");
          res.destroy();
        });
        res.on("close", () => stream.destroy());
        stream.pipe(res);
      },
      (err) => {
        log({ err, template_id: id }, "template copy: cannot be served");
        if (!res.headersSent) answer(res, 500, "internal_error", "The template's files cannot be served now");
        else res.destroy();
      },
    );
    return true;
  };
}

/** The nodes up now among `ids`, with their URLs (the templates area's TemplatePeers). */
export function templatePeers(membership: Membership, channel: ChannelAuth) {
  return {
    self: membership.self.id,
    reachable(ids: readonly string[]) {
      // A draining node still serves what it holds.
      return (
        membership
          .nodes()
          .filter((n) => (n.state === "up" || n.state === "draining") && ids.includes(n.id) && n.id !== membership.self.id)
          // Copies are internal routes: fetched from each node's internal listener.
          .map((n) => ({ id: n.id, url: n.internalUrl }))
      );
    },
    sign: (method: string, url: string) => channel.sign(method, url),
  };
}
