// The seed's code-run contract, exactly: body {code, language, timeout}, answer {logs, error, execution_time_ms}.
import { Type } from "@sinclair/typebox";
import { type Language as LanguageName, LANGUAGES } from "../languages.js";
import { StringMap } from "../../api/schemas/common.js";

// One `enum` rather than a union of literals: the OpenAPI document lists the values in one place and
// a wrong value is reported as "must be one of ...", not as a mismatch with the first literal.
export const Language = Type.Unsafe<LanguageName>({
  type: "string",
  enum: [...LANGUAGES],
  description: "Language of the code",
});

export const CodeRunBody = Type.Object(
  {
    code: Type.String({ description: "The code to execute" }),
    language: Language,
    timeout: Type.Optional(Type.Integer({ minimum: 1, description: "Execution timeout in seconds (default 30)" })),
    context_id: Type.Optional(Type.String({ maxLength: 128, description: "Run in this code context's kernel" })),
    environment: Type.Optional(StringMap),
    stream: Type.Optional(
      Type.Boolean({
        description:
          "Answer with server-sent events (text/event-stream): `stdout`/`stderr` ({text}) as produced, `result` (one rich result), then `end` with the whole answer. Same as `?stream=true` or `Accept: text/event-stream`.",
      }),
    ),
  },
  { additionalProperties: true },
);

/** One rich result, as a notebook shows it: every representation the object has (images base64). */
export const RichResult = Type.Object(
  {
    text: Type.Optional(Type.String({ description: "Plain text (repr / util.inspect)" })),
    html: Type.Optional(Type.String()),
    markdown: Type.Optional(Type.String()),
    png: Type.Optional(Type.String({ description: "base64-encoded PNG" })),
    jpeg: Type.Optional(Type.String({ description: "base64-encoded JPEG" })),
    svg: Type.Optional(Type.String()),
    json: Type.Optional(Type.Unknown()),
    latex: Type.Optional(Type.String()),
    is_main_result: Type.Optional(Type.Boolean({ description: "The value of the cell's last expression" })),
  },
  { additionalProperties: false },
);

export const CodeRunResult = Type.Object(
  {
    logs: Type.Object({ stdout: Type.String(), stderr: Type.String() }, { additionalProperties: false }),
    error: Type.Union([Type.String(), Type.Null()], { description: "null when the run reported no error" }),
    execution_time_ms: Type.Integer(),
    results: Type.Array(RichResult, {
      description:
        "Rich results in the order they were produced: displayed objects, figures, and the value of the last expression (is_main_result). Always [] for bash.",
    }),
  },
  { $id: "CodeRunResult", additionalProperties: false },
);
