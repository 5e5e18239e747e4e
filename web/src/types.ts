// The API's answers as the dashboard reads them, derived from the SDK's types (generated from the
// service's OpenAPI document), so a changed schema fails the dashboard's type-check instead of
// drifting from a hand-written copy.
import type { Answer, Operation, PathsWith } from "../../sdk/typescript/src/http";

type Get<P extends PathsWith<"get">> = Answer<Operation<"get", P>>;
type Post<P extends PathsWith<"post">> = Answer<Operation<"post", P>>;

export type {
  CommandResult,
  FileEntry,
  RichResult,
  SandboxInfo as Sandbox,
  SandboxMetrics as MetricsSample,
} from "../../sdk/typescript/src/sandbox";

export type SandboxList = Get<"/v1/agents/sandboxes">;
export type SandboxEvents = Get<"/v1/agents/sandboxes/{sandbox_id}/events">;
export type KeyList = Get<"/v1/admin/keys">;
export type TenantList = Get<"/v1/admin/tenants">;
export type Stats = Get<"/v1/agents/stats">;
export type NodeList = Get<"/v1/admin/nodes">;
export type StoredFileList = Get<"/v1/files">;
export type ModelList = Get<"/v1/inference/models">;
export type UsageList = Get<"/v1/inference/usage">;
export type DeploymentList = Get<"/v1/deployments/list">;
export type IndexList = Get<"/v1/vectors/indexes">;
export type SearchResult = Post<"/v1/vectors/{index}/search/text">;
export type TemplateList = Get<"/v1/agents/templates">;
export type TemplateBuildList = Get<"/v1/agents/templates/builds">;
export type TemplateDetail = Get<"/v1/agents/templates/{template_id}">;
