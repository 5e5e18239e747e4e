// commands/run: a fresh shell process in the sandbox (PRODUCT.md section 2: exact response keys).
import { Type } from "@sinclair/typebox";

/** Environment variable names a process can actually receive. */
export const EnvMap = Type.Record(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$", maxLength: 256 }), Type.String({ maxLength: 32768 }), {
  maxProperties: 256,
  additionalProperties: false,
  description: "Extra environment variables for this command only",
});

export const CommandRunBody = Type.Object(
  {
    command: Type.String({ minLength: 1, maxLength: 1 << 20, description: "Shell command line, run with `bash -c`" }),
    args: Type.Optional(
      Type.Union([Type.Array(Type.String({ maxLength: 1 << 20 }), { maxItems: 4096 }), Type.Null()], {
        description: "Arguments appended to `command`, each shell-quoted",
      }),
    ),
    working_dir: Type.Optional(
      Type.Union([Type.String({ maxLength: 4096 }), Type.Null()], { description: "Directory to run in (default /home/user)" }),
    ),
    environment: Type.Optional(Type.Union([EnvMap, Type.Null()])),
    timeout: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: "Milliseconds before the command is killed (default 30000)" }),
    ),
    stream: Type.Optional(
      Type.Boolean({
        description:
          "Answer with server-sent events: `stdout`/`stderr` ({text}) as produced, then `end` with the whole answer. Same as `?stream=true` or `Accept: text/event-stream`.",
      }),
    ),
    background: Type.Optional(
      Type.Boolean({
        description:
          "Start the command as a background process and answer at once with {pid, command, args, started_at}; see GET /sandboxes/{id}/commands. `timeout` does not apply.",
      }),
    ),
  },
  { additionalProperties: true },
);

export const CommandRunResult = Type.Object(
  {
    stdout: Type.String(),
    stderr: Type.String(),
    exit_code: Type.Integer({ description: "The process's exit status; 128+N when killed by signal N; 127 for an unknown program" }),
    duration_ms: Type.Integer(),
    success: Type.Boolean({ description: "exit_code is 0 and nothing went wrong" }),
    error: Type.Union([Type.String(), Type.Null()], {
      description: "null on success, else why not: `exit status N`, a timeout, a signal, truncated output",
    }),
  },
  { additionalProperties: false },
);
