// The seed's code-run contract, exactly: body {code, language, timeout}, answer {logs, error, execution_time_ms}.
import { Type } from "@sinclair/typebox";
import { type Language as LanguageName, LANGUAGES } from "../../sandbox/languages.js";
import { StringMap } from "./common.js";

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
  },
  { additionalProperties: true },
);

export const CodeRunResult = Type.Object(
  {
    logs: Type.Object({ stdout: Type.String(), stderr: Type.String() }, { additionalProperties: false }),
    error: Type.Union([Type.String(), Type.Null()], { description: "null when the run reported no error" }),
    execution_time_ms: Type.Integer(),
  },
  { $id: "CodeRunResult", additionalProperties: false },
);
