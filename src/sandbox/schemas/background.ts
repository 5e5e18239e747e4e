// Background processes: started by commands/run with `background: true`, then addressed by pid.
import { Type } from "@sinclair/typebox";
import { BG_SIGNALS } from "../background-protocol.js";
import { SandboxIdParams } from "../../api/schemas/common.js";

/** `?stream=true` on code/run and commands/run. */
export const StreamQuery = Type.Object({
  stream: Type.Optional(
    Type.Unsafe<"true" | "false" | "1" | "0">({
      type: "string",
      enum: ["true", "false", "1", "0"],
      description: "Answer with server-sent events (text/event-stream)",
    }),
  ),
});

export const PidParams = Type.Object({
  ...SandboxIdParams.properties,
  pid: Type.String({ pattern: "^[1-9][0-9]{0,8}$", description: "The process's pid in the sandbox" }),
});

export const BackgroundStarted = Type.Object(
  {
    pid: Type.Integer(),
    command: Type.String(),
    args: Type.Array(Type.String()),
    started_at: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

const processFields = {
  pid: Type.Integer({ description: "The pid in the sandbox" }),
  command: Type.String(),
  args: Type.Array(Type.String()),
  status: Type.Union([Type.Literal("running"), Type.Literal("exited")]),
  exit_code: Type.Union([Type.Integer(), Type.Null()], { description: "null while running; 128+N when ended by signal N" }),
  started_at: Type.String({ format: "date-time" }),
  ended_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
};

export const BackgroundProcess = Type.Object(processFields, { additionalProperties: false });

export const BackgroundList = Type.Object({ commands: Type.Array(BackgroundProcess) }, { additionalProperties: false });

export const BackgroundOutput = Type.Object(
  {
    ...processFields,
    stdout: Type.String({ description: "Output so far: the latest bytes, up to the retention limit per stream" }),
    stderr: Type.String(),
    stdout_truncated: Type.Boolean({ description: "Earlier stdout was dropped (only the latest bytes are retained)" }),
    stderr_truncated: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const StdinBody = Type.Object(
  {
    data: Type.String({ description: "Text written to the process's stdin as UTF-8 (at most 1 MiB by default)" }),
    eof: Type.Optional(Type.Boolean({ description: "Close stdin after writing" })),
  },
  { additionalProperties: false },
);

export const SignalQuery = Type.Object({
  signal: Type.Optional(
    Type.Unsafe<(typeof BG_SIGNALS)[number]>({ type: "string", enum: [...BG_SIGNALS], description: "Signal to send (default KILL)" }),
  ),
});

export const ProcessMessage = Type.Object({ message: Type.String(), pid: Type.Integer() }, { additionalProperties: false });
