// The E2B-compatible API, all under /e2b: the control API (control.ts, snapshots.ts) and, told apart by path,
// what E2B's SDKs send into a sandbox when E2B_SANDBOX_URL is set: envd's Connect RPCs and file
// transfers (process.ts, filesystem.ts) and the code interpreter (interpreter.ts). Which sandbox
// an in-sandbox request is for comes in the E2b-Sandbox-Id header (target.ts), which a
// {port}-{sandboxID}.{domain} host name sets before routing (hosts.ts, wired in api/app.ts).
import type { FastifyPluginAsync } from "fastify";
import type { Services } from "../api/services.js";
import { E2B_PREFIX } from "./auth.js";
import { controlRoutes } from "./control.js";
import { filesystemRoutes } from "./filesystem.js";
import { interpreterRoutes } from "./interpreter.js";
import { processRoutes } from "./process.js";
import { snapshotRoutes } from "./snapshots.js";

export const e2bRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  // E2B's own API, documented by E2B: not part of this service's OpenAPI document.
  app.addHook("onRoute", (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  await app.register(controlRoutes, { prefix: E2B_PREFIX, services });
  await app.register(snapshotRoutes, { prefix: E2B_PREFIX, services });
  await app.register(processRoutes, { prefix: E2B_PREFIX, services });
  await app.register(filesystemRoutes, { prefix: E2B_PREFIX, services });
  await app.register(interpreterRoutes, { prefix: E2B_PREFIX, services });
};
