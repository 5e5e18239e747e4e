// What route handlers depend on, bundled once at start-up.
import type { ClusterArea } from "../cluster/setup.js";
import type { DeploymentRouteDeps } from "../deployments/routes.js";
import type { E2bSettings } from "../e2b/settings.js";
import type { EventsArea } from "../events/setup.js";
import type { FileService } from "../files/service.js";
import type { EmbeddingService } from "../inference/embeddings.js";
import type { ProviderRegistry } from "../inference/providers.js";
import type { UsageStore } from "../inference/usage.js";
import type { NetworkService } from "../network/service.js";
import type { SandboxManager } from "../sandbox/manager.js";
import type { SandboxService } from "../sandbox/service.js";
import type { SandboxConfig } from "../sandbox/settings.js";
import type { AdminKeys, KeyDirectory } from "../tenancy/key-directory.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import type { TemplateService } from "../templates/service.js";
import type { VectorService } from "../vectors/service.js";
import type { Metrics } from "./metrics.js";
import type { OpenRequests } from "./open-requests.js";

export interface Services {
  /** The server-wide settings, the sandbox area's (routes check run timeouts and sizes against them) and the E2B API's. */
  config: SandboxConfig & E2bSettings;
  keys: KeyDirectory;
  /** Streams, transfers and port connections open now, by API key: revoking a key ends its own. */
  openRequests: OpenRequests;
  /** The operator's admin key (the /v1/admin routes). */
  admin: AdminKeys;
  /** Tenants and their quotas. */
  tenants: TenantDirectory;
  sandboxes: SandboxManager;
  /** Everything a caller does with its sandboxes (runs, commands, contexts), whichever route it came through. */
  sandbox: SandboxService;
  metrics?: Metrics;
  /** Egress policies, the egress log and port connections of sandboxes; absent, no such routes. */
  network?: NetworkService;
  /** The inference gateway's upstreams and the store it records usage in; absent, no /v1/inference routes. */
  inference?: { usage: UsageStore; providers: ProviderRegistry; embeddings?: EmbeddingService };
  /** Vector indexes and search (the /v1/vectors routes); absent, no such routes. */
  vectors?: VectorService;
  /** Deployments and the host's accelerators (/v1/deployments, /v1/accelerators); absent, no such routes. */
  deployments?: DeploymentRouteDeps;
  /** Stored files (/v1/files, sandbox files/import and files/export); absent, no such routes. */
  files?: FileService;
  /** Sandbox lifecycle events and webhooks (/sandboxes/{id}/events, /webhooks); absent, no such routes. */
  events?: EventsArea;
  /** This node's part in a cluster (AGENTBOX_REDIS_URL); absent: one node, and no cluster code runs. */
  cluster?: ClusterArea;
  /** Tenants' own templates (/templates/build, get, delete, builds); absent, only the built-ins. */
  templates?: TemplateService;
}
