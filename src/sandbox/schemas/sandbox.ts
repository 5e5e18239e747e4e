// Sandbox, template and lifecycle schemas (PRODUCT.md section 2: exact keys, nothing more).
import { type Static, Type } from "@sinclair/typebox";
import { METADATA_FILTER_KEY, SANDBOX_STATUSES } from "../store/sandboxes.js";
import { Pagination, StringMap } from "../../api/schemas/common.js";
import { NetworkRules } from "../../network/schemas.js";
import { LifecycleCreateFields } from "./lifecycle-create.js";

export const Sandbox = Type.Object(
  {
    sandbox_id: Type.String(),
    status: Type.Union(SANDBOX_STATUSES.map((s) => Type.Literal(s))),
    template: Type.String(),
    template_id: Type.String(),
    started_at: Type.String({ format: "date-time" }),
    timeout_at: Type.String({ format: "date-time" }),
    cpu_count: Type.Number(),
    memory_mb: Type.Integer(),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    ended_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
  },
  { $id: "Sandbox", additionalProperties: false },
);
export type SandboxBody = Static<typeof Sandbox>;

export const CreateSandboxBody = Type.Object(
  {
    template: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: "Template id (default python-base-v1)" })),
    timeout: Type.Optional(Type.Integer({ minimum: 1, description: "Seconds the sandbox lives (default 300)" })),
    env_vars: Type.Optional(StringMap),
    metadata: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), Type.Unknown(), { maxProperties: 64 })),
    internet_access: Type.Optional(
      Type.Boolean({ description: "Egress through the service's proxy to any public address (default false: none)" }),
    ),
    network: Type.Optional(NetworkRules),
    provider: Type.Optional(Type.String({ description: "Accepted for compatibility and ignored" })),
    region: Type.Optional(Type.String({ description: "Accepted for compatibility and ignored" })),
    ...LifecycleCreateFields,
  },
  { additionalProperties: true },
);

/** `?state=running&metadata.user=abc`: a status, and metadata keys (AND-ed) that must equal the given strings. */
export const SandboxListQuery = Type.Object(
  {
    ...Pagination.properties,
    state: Type.Optional(
      Type.Union(
        SANDBOX_STATUSES.map((s) => Type.Literal(s)),
        { description: "Only sandboxes in this state" },
      ),
    ),
  },
  {
    patternProperties: {
      [`^metadata\\.${METADATA_FILTER_KEY.source.slice(1)}`]: Type.String({
        maxLength: 256,
        description:
          "metadata.KEY=VALUE: only sandboxes whose metadata KEY equals VALUE (strings; numbers and booleans as JSON writes them)",
      }),
    },
  },
);

export const SandboxList = Type.Object(
  { sandboxes: Type.Array(Type.Ref(Sandbox)), total: Type.Integer() },
  { additionalProperties: false },
);

export const KillResponse = Type.Object({ message: Type.String(), sandbox_id: Type.String() }, { additionalProperties: false });

export const SetTimeoutBody = Type.Object(
  { timeout: Type.Integer({ minimum: 1, description: "Seconds from now" }) },
  { additionalProperties: true },
);

export const SetTimeoutResponse = Type.Object(
  { message: Type.String(), timeout: Type.Integer(), timeout_at: Type.String({ format: "date-time" }) },
  { additionalProperties: false },
);

export const Template = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Type.String(),
    vcpu_count: Type.Number(),
    memory_mb: Type.Integer(),
    disk_size_mb: Type.Integer(),
    visibility: Type.String(),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

export const TemplateList = Type.Object(
  { templates: Type.Array(Template), limit: Type.Integer(), offset: Type.Integer() },
  { additionalProperties: false },
);
