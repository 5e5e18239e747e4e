// Code contexts: extra isolated kernels in one sandbox (PRODUCT.md section 2).
import { Type } from "@sinclair/typebox";
import { Language } from "./code.js";
import { SandboxIdParams } from "../../api/schemas/common.js";

export const ContextParams = Type.Composite([SandboxIdParams, Type.Object({ context_id: Type.String({ minLength: 1, maxLength: 128 }) })]);

export const CreateContextBody = Type.Object(
  {
    language: Type.Optional(Language),
    cwd: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: "Working directory of the kernel (default /home/user)" })),
  },
  { additionalProperties: true },
);

export const CodeContext = Type.Object(
  {
    context_id: Type.String(),
    language: Type.String(),
    cwd: Type.String(),
    created_at: Type.String({ format: "date-time" }),
    expires_at: Type.String({ format: "date-time", description: "The context ends with its sandbox" }),
    status: Type.Literal("active"),
  },
  { additionalProperties: false },
);

export const ContextList = Type.Object({ contexts: Type.Array(CodeContext) }, { additionalProperties: false });

export const DeleteContextResult = Type.Object({ message: Type.String(), context_id: Type.String() }, { additionalProperties: false });
