// Create-body fields that start a sandbox from a snapshot or choose what it does when its life runs
// out (spread into CreateSandboxBody).
import { Type } from "@sinclair/typebox";

export const LifecycleCreateFields = {
  snapshot_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 128, description: "Start from this snapshot: its files and settings (kernel state is lost)" }),
  ),
  lifecycle: Type.Optional(
    Type.Object(
      {
        on_timeout: Type.Optional(
          Type.Union([Type.Literal("kill"), Type.Literal("pause"), Type.Literal("snapshot")], {
            description: "What happens when the sandbox's life runs out: end it (default), pause it, or snapshot its files and end it",
          }),
        ),
      },
      { additionalProperties: false },
    ),
  ),
};
