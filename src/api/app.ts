// The HTTP application: where every request enters. Order: request id → authentication (auth.ts)
// → schema validation (schemas/) → route handler (routes/) → errors mapped in error-handler.ts.
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { templateRoutes } from "../templates/routes.js";
import { vectorRoutes } from "../vectors/routes.js";
import { E2B_KEY_HEADERS } from "../e2b/auth.js";
import { e2bHostMatcher, e2bHostRewriter } from "../e2b/hosts.js";
import { e2bRoutes } from "../e2b/routes.js";
import { tenantQuotaDefaults } from "../sandbox/settings.js";
import { ApiError } from "../errors.js";
import { embeddingRoutes } from "../inference/embeddings-routes.js";
import { inferenceRoutes } from "../inference/routes.js";
import { installAuth } from "./auth.js";
import { clientError, lingerBeforeClose, requestId } from "./bounds.js";
import { limitConnections } from "./connections.js";
import { installErrorHandler, routerError } from "./error-handler.js";
import { installJsonParser } from "./json-body.js";
import { installRateLimits } from "./rate-limit.js";
import { adminRoutes } from "../tenancy/routes.js";
import { clusterAdminRoutes } from "../cluster/admin-routes.js";
import { defaultNodeUrl, SingleNode } from "../cluster/single-node.js";
import { adminSandboxRoutes } from "../sandbox/routes/admin.js";
import { backgroundRoutes } from "../sandbox/routes/background.js";
import { codeRoutes } from "../sandbox/routes/code.js";
import { commandRoutes } from "../sandbox/routes/commands.js";
import { contextRoutes } from "../sandbox/routes/contexts.js";
import { dashboardRoutes } from "../dashboard/routes.js";
import { deploymentRoutes } from "../deployments/routes.js";
import { fileRoutes } from "../sandbox/routes/files.js";
import { metricsRoutes } from "../sandbox/routes/metrics.js";
import { networkRoutes } from "../network/routes/network.js";
import { installPortUpgrades, portRoutes } from "../network/routes/ports.js";
import { withSuspensions } from "../tenancy/suspensions.js";
import { eventRoutes } from "../events/routes/events.js";
import { lifecycleRoutes } from "../sandbox/routes/lifecycle.js";
import { webhookRoutes } from "../events/routes/webhooks.js";
import { sandboxRoutes } from "../sandbox/routes/sandboxes.js";
import { statsRoutes } from "../stats/routes.js";
import { sandboxTransferRoutes, storedFileRoutes } from "../files/routes.js";
import { CodeRunResult } from "../sandbox/schemas/code.js";
import { ErrorEnvelope } from "./schemas/common.js";
import { Sandbox } from "../sandbox/schemas/sandbox.js";
import type { Services } from "./services.js";
import { documentEventStreams } from "./sse.js";
import { lazySerializers } from "./lazy-serializers.js";

/** Swagger UI sets inline styles from its scripts, hence 'unsafe-inline' for styles only; its logo is a data: URL. */
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

export async function buildApp(services: Services, logger: Logger): Promise<FastifyInstance> {
  const { config } = services;
  // E2B's {port}-{sandboxID}.{domain} host names, only when the operator set a domain (src/e2b/hosts.ts).
  const e2bHosts = config.e2bDomain ? e2bHostRewriter(config.e2bDomain) : undefined;
  const app = Fastify({
    rewriteUrl: e2bHosts,
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    routerOptions: { maxParamLength: 512 },
    // A malformed percent-encoding or an overlong path parameter is refused by the router before
    // any route runs; it gets the error envelope too (and the no-key case is moot: nothing is read).
    frameworkErrors: (err, request, reply) => {
      const api = routerError(err);
      // The option's type is generic over route types that this handler has none of.
      (reply as unknown as FastifyReply)
        .header("x-request-id", request.id)
        .status(api.status)
        .send({ error: { code: api.code, message: api.message } });
    },
    // Read by genReqId, which only keeps a sane token: never log a client's arbitrary text as the id.
    requestIdHeader: false,
    genReqId: requestId,
    // A client has headerTimeoutMs to send its headers (a silent one is closed too); Node checks
    // every second instead of its default 30 s, so a slow client is gone within a second of it.
    // (Node refuses a header timeout longer than the whole-request one.)
    http: {
      maxHeaderSize: config.maxHeaderBytes,
      headersTimeout: config.requestTimeoutMs > 0 ? Math.min(config.headerTimeoutMs, config.requestTimeoutMs) : config.headerTimeoutMs,
      connectionsCheckingInterval: 1000,
    },
    requestTimeout: config.requestTimeoutMs,
    clientErrorHandler: clientError,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
    // Requests that arrive while closing get our own 503 envelope (hook below), not Fastify's.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const metrics = services.metrics;
  limitConnections(
    app.server,
    config,
    logger,
    metrics && {
      refused: (reason) => metrics.connectionsRefused.inc({ reason }),
      opened: () => metrics.openConnections.inc(),
      closed: () => metrics.openConnections.dec(),
    },
  );

  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
    if (closing) throw new ApiError("at_capacity", "The service is shutting down; retry shortly", 5);
  });
  // In a cluster, a request for a sandbox another node runs is relayed there before Fastify's
  // routing and hooks (the owner runs them), once its route is known (cached or read); not while
  // closing, nor one addressed by an E2B host name (rewritten into another route first). What turns
  // out not to be relayed after the route's read is handed to Fastify then.
  const relay = services.cluster?.relay;
  if (relay) {
    const onE2bHost = config.e2bDomain ? e2bHostMatcher(config.e2bDomain) : () => false;
    const [fastifyHandler] = app.server.listeners("request") as ((req: IncomingMessage, res: ServerResponse) => void)[];
    if (fastifyHandler) {
      app.server.removeListener("request", fastifyHandler);
      app.server.on("request", (req: IncomingMessage, res: ServerResponse) => {
        if (closing || onE2bHost(req) || !relay(req, res, fastifyHandler)) fastifyHandler(req, res);
      });
    }
  }
  // While closing, no connection is kept alive after its response, so that close() need not wait for it.
  // An answer that closes the connection before the request body was read (a 413 for a body over
  // the limit) closes it gently, so that the client can read the answer (bounds.ts).
  app.addHook("onSend", async (request, reply) => {
    if (closing) reply.header("connection", "close");
    if (!request.raw.complete && reply.getHeader("connection") === "close") lingerBeforeClose(request.raw.socket, request.raw);
  });

  installJsonParser(app, config.maxJsonDepth);

  if (services.metrics) {
    const metrics = services.metrics;
    app.addHook("onResponse", async (request, reply) => {
      const labels = { method: request.method, route: request.routeOptions.url ?? "unmatched", status: String(reply.statusCode) };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    });
    app.get("/metrics", { schema: { hide: true } }, async (_request, reply) => {
      reply.header("content-type", metrics.registry.contentType);
      return metrics.registry.metrics();
    });
  }

  await app.register(swagger, {
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "AgentBox",
        version: "1.0.0",
        description: "Self-hosted sandboxes for AI agents: run untrusted code, move files, call models.",
      },
      components: { securitySchemes: { bearerAuth: { type: "http", scheme: "bearer" } } },
      security: [{ bearerAuth: [] }],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (doc) => ("openapiObject" in doc ? documentEventStreams(doc.openapiObject) : doc.swaggerObject),
  });
  // The API's own page: its scripts, styles and images from /docs/static only, its fetches to this
  // origin (the document and "Try it out"); no framing, no forms elsewhere, no external validator.
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    staticCSP: DOCS_CSP,
    uiConfig: { validatorUrl: null },
  });
  app.addSchema(ErrorEnvelope);
  app.addSchema(Sandbox);
  app.addSchema(CodeRunResult);

  // Keys as the door sees them: a suspended tenant's are refused and count as inactive.
  const keys = withSuspensions(services.keys, services.tenants);
  installAuth(app, keys, services.admin, services.openRequests, [E2B_KEY_HEADERS]);
  installErrorHandler(app);
  // In a cluster: requests for other nodes' sandboxes are forwarded before they are counted or parsed,
  // and the per-minute counters are shared by every node through Redis.
  services.cluster?.install(app);
  const { cluster } = services;
  await installRateLimits(app, services, cluster ? { redis: cluster.redis, exempt: (request) => cluster.counted(request) } : {});

  app.get("/health", { schema: { hide: true } }, async () => ({ status: "ok", live_sandboxes: services.sandboxes.liveCount() }));
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  const prefixes = config.mountRootAliases ? ["/v1/agents", ""] : ["/v1/agents"];
  for (const prefix of prefixes) {
    await app.register(sandboxRoutes, { prefix, sandbox: services.sandbox, network: services.network, templates: services.templates });
    await app.register(lifecycleRoutes, { prefix, lifecycle: services.sandboxes.lifecycle });
    if (services.events) {
      await app.register(eventRoutes, { prefix, sandbox: services.sandbox, events: services.events.events });
      await app.register(webhookRoutes, { prefix, webhooks: services.events.webhooks });
    }
    await app.register(codeRoutes, { prefix, sandbox: services.sandbox });
    await app.register(commandRoutes, { prefix, sandbox: services.sandbox });
    await app.register(backgroundRoutes, { prefix, sandbox: services.sandbox });
    await app.register(fileRoutes, { prefix, sandboxes: services.sandboxes, config });
    if (services.files)
      await app.register(sandboxTransferRoutes, { prefix, files: services.files, maxFileBytes: services.files.maxFileBytes });
    await app.register(contextRoutes, { prefix, sandbox: services.sandbox });
    if (services.templates) await app.register(templateRoutes, { prefix, templates: services.templates });
    await app.register(metricsRoutes, { prefix, sandbox: services.sandbox });
    if (services.network) {
      await app.register(networkRoutes, { prefix, network: services.network });
      await app.register(portRoutes, {
        prefix,
        network: services.network,
        keys,
        open: services.openRequests,
        publicUrl: services.network.settings.publicUrl,
      });
    }
  }
  if (services.network)
    installPortUpgrades(
      app.server,
      services.network,
      keys,
      services.openRequests,
      config.mountRootAliases,
      e2bHosts,
      services.cluster?.upgrade,
    );
  await app.register(adminRoutes, {
    prefix: "/v1/admin",
    keys: services.keys,
    tenants: services.tenants,
    defaults: tenantQuotaDefaults(config),
    openRequests: services.openRequests,
    sandboxes: services.sandboxes,
  });
  await app.register(adminSandboxRoutes, { prefix: "/v1/admin", sandboxes: services.sandboxes });
  // The node list: the cluster's, or this lone node (the same routes, so the API and the dashboard read one shape).
  if (services.cluster) await services.cluster.routes(app);
  else
    await app.register(clusterAdminRoutes, {
      prefix: "/v1/admin",
      membership: new SingleNode(
        config.nodeId,
        defaultNodeUrl(config.host, config.port),
        () => services.sandboxes.liveCount(),
        () => services.deployments?.deployments.gpus() ?? [],
      ),
    });
  if (services.metrics)
    await app.register(statsRoutes, {
      metrics: services.metrics,
      liveByTenant: () => services.sandboxes.liveByTenantCounts(),
      peers: services.cluster?.peerReads,
    });
  await app.register(dashboardRoutes);
  if (services.files)
    await app.register(storedFileRoutes, { prefix: "/v1", files: services.files, maxFileBytes: services.files.maxFileBytes });
  if (services.inference) {
    // The gateway's code tool runs code through the same service (and gates) as POST /code/run.
    // In a cluster, a completion naming a deployment another node runs is forwarded there.
    const elsewhere = cluster?.forwardModel;
    // And GET /models lists the other nodes' models (and the tenant's deployments on them) with this node's.
    const deployments = services.deployments?.deployments;
    // Another node asking gets this node's own only (it merges them), so nothing is listed twice over.
    const elsewhereModels =
      cluster &&
      (async (request: FastifyRequest) => {
        if (cluster.peerReads.fromPeer(request.headers, request.method, request.url)) return [];
        const [rows, peers] = await Promise.all([deployments?.modelsElsewhere(request.apiKey.tenantId) ?? [], cluster.peerModels(request)]);
        return [...rows, ...peers];
      });
    const deps = { ...services.inference, sandboxes: services.sandbox, maxJsonDepth: config.maxJsonDepth, elsewhere, elsewhereModels };
    await app.register(inferenceRoutes, { prefix: "/v1/inference", deps });
    const embeddings = services.inference.embeddings;
    if (embeddings) await app.register(embeddingRoutes, { prefix: "/v1/inference", embeddings, elsewhere });
  }
  if (services.deployments) await app.register(deploymentRoutes, { prefix: "/v1", deps: services.deployments });
  // E2B's SDKs, unchanged, with E2B_API_URL and E2B_SANDBOX_URL set to <base>/e2b (docs/e2b.md).
  await app.register(e2bRoutes, { services });
  if (services.vectors) {
    await app.register(vectorRoutes, { prefix: "/v1/vectors", vectors: services.vectors, maxJsonDepth: config.maxJsonDepth });
  }
  return app;
}
