// Pause, resume, snapshot and fork schemas (the create-body fields are in ./lifecycle-create.ts).
import { Type } from "@sinclair/typebox";
import { Sandbox } from "./sandbox.js";

export const KernelState = Type.Union([Type.Literal("preserved"), Type.Literal("lost")], {
  description: "Whether the sandbox's memory and running kernels were kept (pause/resume) or only its files (snapshots, forks)",
});

export const SnapshotIdParams = Type.Object({ snapshot_id: Type.String({ minLength: 1, maxLength: 128 }) });

export const Snapshot = Type.Object(
  {
    snapshot_id: Type.String(),
    sandbox_id: Type.String({ description: "The sandbox it was taken of" }),
    kind: Type.Union([Type.Literal("manual"), Type.Literal("timeout"), Type.Literal("hibernate")], {
      description: "manual: asked for; timeout: on_timeout snapshot; hibernate: a sandbox paused past the operator's limit",
    }),
    created_at: Type.String({ format: "date-time" }),
    size_bytes: Type.Integer({ description: "Size of the archive (a tar of /home/user)" }),
    files: Type.Integer({ description: "Entries in the archive (files, directories, links)" }),
    sha256: Type.String({ description: "SHA-256 of the archive, checked after it was written and before every restore" }),
    template: Type.String(),
    metadata: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: false },
);

export const SnapshotList = Type.Object({ snapshots: Type.Array(Snapshot), total: Type.Integer() }, { additionalProperties: false });

export const PauseResponse = Type.Object(
  {
    sandbox_id: Type.String(),
    status: Type.String(),
    timeout_at: Type.String({ format: "date-time" }),
    kernel_state: KernelState,
  },
  { additionalProperties: false },
);

export const ForkBody = Type.Object(
  { count: Type.Optional(Type.Integer({ minimum: 1, description: "Copies to make (default 1; at most AGENTBOX_MAX_FORK_COUNT)" })) },
  { additionalProperties: false },
);

export const ForkResponse = Type.Object(
  { sandboxes: Type.Array(Type.Ref(Sandbox)), kernel_state: KernelState },
  { additionalProperties: false },
);

export const DeleteSnapshotResponse = Type.Object({ message: Type.String(), snapshot_id: Type.String() }, { additionalProperties: false });

/** A create's answer: the sandbox, and `kernel_state: "lost"` when it was started from a snapshot. */
export const SandboxCreated = Type.Composite([Sandbox, Type.Object({ kernel_state: Type.Optional(KernelState) })], {
  additionalProperties: false,
});
