// The AgentBox TypeScript SDK: `new AgentBox({apiKey, baseUrl})`: sandboxes, the gateway, vectors,
// stored files, deployments, snapshots, webhooks, templates; `ab.http.call(...)` reaches any route, typed.
export { AgentBox, Admin, Inference, Sandboxes, Vectors, type ChatChunk, type ChatCompletion } from "./client.js";
export { AgentBoxError, type ErrorCode, type KnownErrorCode } from "./errors.js";
export {
  HttpClient,
  type Answer,
  type CallOptions,
  type ClientOptions,
  type JsonBody,
  type Method,
  type Operation,
  type PathsWith,
} from "./http.js";
export type { components, paths } from "./openapi.js";
export { Deployments, type FilePurpose, Files, Snapshots, Webhooks } from "./platform.js";
export {
  Sandbox,
  SandboxCommands,
  SandboxContexts,
  SandboxFiles,
  SandboxNetwork,
  type CodeContext,
  type CommandEvent,
  type CommandResult,
  type CreateSandboxParams,
  type FileEntry,
  type RichResult,
  type RunEvent,
  type RunOptions,
  type RunResult,
  type SandboxInfo,
  type SandboxMetrics,
} from "./sandbox.js";
export { readEvents, type ServerEvent } from "./sse.js";
export { type BuildLogLine, type BuildTemplateParams, type TemplateBuildStatus, type TemplateDetail, Templates } from "./templates.js";
