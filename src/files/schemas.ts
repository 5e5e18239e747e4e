// Stored files (/v1/files) and their way into and out of sandboxes: the file object (the hosted
// API's upload answer plus the OpenAI file object's fields), list, delete, import/export.
import { Type } from "@sinclair/typebox";
import { PURPOSES } from "./service.js";

export const Purpose = Type.Union(
  PURPOSES.map((p) => Type.Literal(p)),
  { description: "What the file is for" },
);

export const FileIdParams = Type.Object({
  file_id: Type.String({ minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9_-]+$", description: "A file id (file-...)" }),
});

const fileFields = {
  id: Type.String({ description: "The file's id (file-...)" }),
  object: Type.Literal("file"),
  bytes: Type.Integer({ description: "Size in bytes" }),
  created_at: Type.Integer({ description: "Unix seconds" }),
  filename: Type.String(),
  purpose: Type.String(),
  sha256: Type.String({ description: "SHA-256 of the bytes, hex" }),
  expires_at: Type.Union([Type.Integer(), Type.Null()], { description: "Unix seconds after which the file is deleted; null: never" }),
  expires_after: Type.Union([Type.Integer(), Type.Null()], { description: "Seconds from creation to expiry; null: never" }),
  status: Type.Literal("processed"),
};

export const FileObject = Type.Object(fileFields, { additionalProperties: false });

export const UploadFileResult = Type.Object(
  { message: Type.String(), file_name: Type.String(), ...fileFields },
  { additionalProperties: false, description: "The stored file: the hosted API's {message, file_name, purpose} and the file object" },
);

export const FileListQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,5}$", description: "Page size (1..10000, default 1000)" })),
    after: Type.Optional(Type.String({ maxLength: 128, description: "Cursor: the last id of the previous page" })),
    order: Type.Optional(
      Type.Union([Type.Literal("asc"), Type.Literal("desc")], { description: "By creation; default desc (newest first)" }),
    ),
    purpose: Type.Optional(Purpose),
  },
  { additionalProperties: true },
);

export const FileListResult = Type.Object(
  {
    object: Type.Literal("list"),
    data: Type.Array(FileObject),
    first_id: Type.Union([Type.String(), Type.Null()]),
    last_id: Type.Union([Type.String(), Type.Null()]),
    has_more: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const FileDeleteResult = Type.Object(
  {
    message: Type.String(),
    file_id: Type.String(),
    file_name: Type.String(),
    id: Type.String(),
    object: Type.Literal("file"),
    deleted: Type.Literal(true),
  },
  { additionalProperties: false },
);

const SandboxPath = Type.String({ minLength: 1, maxLength: 4096, description: "Absolute, or relative to /home/user" });

export const ImportBody = Type.Object(
  {
    file_id: FileIdParams.properties.file_id,
    path: Type.Optional({
      ...SandboxPath,
      description: "Where to write it (default /home/user/<filename>; a directory receives it under its filename)",
    }),
  },
  { additionalProperties: true },
);

export const ImportResult = Type.Object(
  { message: Type.String(), file_id: Type.String(), path: Type.String(), size: Type.Integer() },
  { additionalProperties: false },
);

export const ExportBody = Type.Object(
  {
    path: SandboxPath,
    purpose: Purpose,
    filename: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "Default: the file's name in the sandbox" })),
    expires_after: Type.Optional(Type.Integer({ minimum: 1, description: "Seconds until the new file is deleted" })),
  },
  { additionalProperties: true },
);
