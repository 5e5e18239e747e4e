// Request and response schemas of the template routes (section 3.10 of the API this follows); they
// validate requests and generate the OpenAPI document.
import { Type } from "@sinclair/typebox";
import { StringMap } from "../api/schemas/common.js";
import { NetworkRules } from "../network/schemas.js";
import { STEP_TYPES, type StepType } from "./steps.js";

export const TemplateIdParams = Type.Object({ template_id: Type.String({ minLength: 1, maxLength: 128 }) });
export const BuildIdParams = Type.Object({ build_id: Type.String({ minLength: 1, maxLength: 128 }) });

const BuildStep = Type.Object(
  {
    type: Type.Unsafe<StepType>(Type.String({ enum: [...STEP_TYPES] })),
    args: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 256 })),
    content: Type.Optional(Type.String({ maxLength: 16 * 2 ** 20, description: "base64 (copy_file)" })),
    options: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);

const TemplateName = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: "^[A-Za-z0-9][A-Za-z0-9._-]*$",
  description: "Unique among your templates",
});
const Description = Type.String({ maxLength: 1024 });

export const SaveSandboxBody = Type.Object(
  { name: TemplateName, description: Type.Optional(Description) },
  { additionalProperties: false },
);

export const BuildBody = Type.Object(
  {
    name: TemplateName,
    description: Type.Optional(Description),
    template_id: Type.Optional(
      Type.String({ maxLength: 128, description: "One of your templates to run build_steps on (instead of docker_image)" }),
    ),
    docker_image: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: "[registry/]repository[:tag|@sha256:digest], from a registry the operator allows",
      }),
    ),
    dockerfile: Type.Optional(
      Type.String({
        maxLength: 1 << 20,
        description:
          "A Dockerfile: FROM an allowed image, one of your templates or an earlier stage (FROM ... AS name); RUN, COPY/ADD (from `context`, or COPY --from=<stage>), ENV, ARG, WORKDIR, LABEL, USER root",
      }),
    ),
    context: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 1024 }), Type.String({ description: "base64" }), {
        description: "The dockerfile's build context: relative path → content (base64), the files COPY and ADD take",
      }),
    ),
    registry_auth: Type.Optional(
      Type.Object(
        { username: Type.String({ minLength: 1, maxLength: 256 }), password: Type.String({ minLength: 1, maxLength: 4096 }) },
        { description: "Credentials for docker_image's registry: used for this build only, never stored", additionalProperties: false },
      ),
    ),
    vcpu_count: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
    memory_mb: Type.Optional(Type.Integer({ minimum: 64, maximum: 1 << 20 })),
    disk_mb: Type.Optional(Type.Integer({ minimum: 16, maximum: 1 << 22 })),
    start_cmd: Type.Optional(Type.String({ maxLength: 4096, description: "Not supported (400)" })),
    ready_cmd: Type.Optional(Type.String({ maxLength: 4096, description: "Not supported (400)" })),
    ready_timeout_secs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600 })),
    environment: Type.Optional(StringMap),
    build_steps: Type.Optional(
      Type.Array(BuildStep, { maxItems: 256, description: "Run in order in a build sandbox on docker_image's or template_id's root" }),
    ),
    tags: Type.Optional(StringMap),
    network: Type.Optional(
      Type.Composite([NetworkRules], {
        description:
          "What the build's steps (RUN, pip_install, apt_install...) may reach, through the egress proxy as a sandbox's `network`: " +
          "only the allow_out destinations, never the operator's denied or never-reachable ones. Absent (or allow_out empty): the build has no network.",
        additionalProperties: false,
      }),
    ),
  },
  { additionalProperties: false },
);

export const BuildAccepted = Type.Object({
  build_id: Type.String(),
  template_id: Type.String(),
  status: Type.String(),
  message: Type.String(),
});

export const BuildStatus = Type.Object({
  build_id: Type.String(),
  template_id: Type.String(),
  status: Type.Union(["pending", "started", "running", "completed", "failed", "cancelled"].map((s) => Type.Literal(s))),
  phase: Type.Union(["initializing", "preparing", "building", "finalizing", "completed"].map((s) => Type.Literal(s))),
  progress_percent: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
  started_at: Type.Union([Type.String(), Type.Null()]),
  completed_at: Type.Union([Type.String(), Type.Null()]),
  node_id: Type.Union([Type.String(), Type.Null()], {
    description:
      "The node that runs the build (AGENTBOX_NODE_ID; in a cluster, the executor it was placed on); null for a build recorded before nodes were",
  }),
});

export const BuildList = Type.Object({
  builds: Type.Array(
    Type.Composite([
      BuildStatus,
      Type.Object({ template_name: Type.String(), created_at: Type.String({ description: "When the build was asked for" }) }),
    ]),
  ),
});

export const BuildListQuery = Type.Object({
  limit: Type.Optional(
    Type.String({ pattern: "^(?:[1-9][0-9]?|1[0-9]{2}|200)$", description: "How many, newest first (1..200, default 50)" }),
  ),
});

export const TemplateDetail = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  vcpu_count: Type.Integer(),
  memory_mb: Type.Integer(),
  disk_size_mb: Type.Integer(),
  visibility: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
  status: Type.String({ description: "building, ready or failed" }),
  base_image: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  environment: Type.Optional(StringMap),
  workdir: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: "Where its sandboxes start (a Dockerfile's WORKDIR)" })),
  tags: Type.Optional(StringMap),
  build_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  warm_sandboxes: Type.Optional(
    Type.Integer({ description: "Started sandboxes waiting in the template's warm pool now (creates from it take one)" }),
  ),
});
