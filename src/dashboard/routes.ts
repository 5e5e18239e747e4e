// The dashboard: the static files `npm run setup` builds into web/dist, served at `/` (index.html)
// and `/assets/*` (content-hashed names, so cached for good). No key is needed to load them: the
// page asks for one and sends it with every API call it makes, like any other client.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { FastifyPluginAsync } from "fastify";
import { ApiError } from "../errors.js";

const HERE = path.dirname(new URL(import.meta.url).pathname);
/** From src/dashboard (tsx) or dist/src/dashboard (compiled): the repository's web/dist. */
const CANDIDATES = [path.resolve(HERE, "../../web/dist"), path.resolve(HERE, "../../../web/dist")];

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".map": "application/json",
};

/**
 * The page may run only the scripts its index names (a fresh nonce per load, and the modules they
 * import), load its own styles, talk only to this origin, and show images from data: URLs (plot
 * results); HTML results go to an iframe whose sandbox forbids scripts and same-origin access. Not
 * 'self' for scripts: a sandbox's port is relayed on this origin, and whatever a tenant serves
 * there must never be loadable as the dashboard's script. CodeMirror injects its styles at run
 * time, hence 'unsafe-inline' for styles only.
 */
const csp = (nonce: string) =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; ` +
  "connect-src 'self'; frame-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  body: Buffer;
  type: string;
}

/** Every built file, read once: the dashboard is a few hundred kilobytes. */
function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const assetDir = path.join(dir, "assets");
  if (!fs.existsSync(assetDir)) return assets;
  for (const name of fs.readdirSync(assetDir)) {
    const type = TYPES[path.extname(name)];
    if (type) assets.set(name, { body: fs.readFileSync(path.join(assetDir, name)), type });
  }
  return assets;
}

export const dashboardRoutes: FastifyPluginAsync = async (app) => {
  const dir = CANDIDATES.find((d) => fs.existsSync(path.join(d, "index.html")));
  // Split where the nonce goes: each <script tag of the built index gets the load's nonce.
  const indexParts = dir ? fs.readFileSync(path.join(dir, "index.html"), "utf8").split("<script") : undefined;
  const assets = dir ? loadAssets(dir) : new Map<string, Asset>();

  app.get("/", { schema: { hide: true } }, async (_request, reply) => {
    if (!indexParts) throw new ApiError("not_found", "The dashboard is not built; run `npm run setup` (or `npm run build:web`)");
    const nonce = crypto.randomBytes(16).toString("base64");
    const index = indexParts.join(`<script nonce="${nonce}"`);
    return reply
      .header("content-type", "text/html; charset=utf-8")
      .header("cache-control", "no-cache")
      .header("content-security-policy", csp(nonce))
      .header("x-content-type-options", "nosniff")
      .header("referrer-policy", "no-referrer")
      .send(index);
  });

  app.get<{ Params: { name: string } }>("/assets/:name", { schema: { hide: true } }, async (request, reply) => {
    const asset = assets.get(request.params.name);
    if (!asset) throw new ApiError("not_found", "No such dashboard asset");
    return reply
      .header("content-type", asset.type)
      .header("cache-control", "public, max-age=31536000, immutable")
      .header("x-content-type-options", "nosniff")
      .send(asset.body);
  });
};
