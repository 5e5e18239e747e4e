// File routes: read/write/list/delete/mkdir over JSON, upload (multipart) and download (raw bytes).
// PRODUCT.md section 2 fixes the response keys; nothing more is sent.
import { Type } from "@sinclair/typebox";

const Path = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: "Absolute, or relative to /home/user; always resolved inside the sandbox",
});

export const FilePathBody = Type.Object({ path: Path }, { additionalProperties: true });

export const FileListBody = Type.Object({ path: Type.Optional(Path) }, { additionalProperties: true });

export const FileWriteBody = Type.Object(
  { path: Path, content: Type.String({ description: "Text to write (UTF-8); parent directories are created" }) },
  { additionalProperties: true },
);

export const DownloadQuery = Type.Object({ path: Path }, { additionalProperties: true });

export const FileReadResult = Type.Object(
  { content: Type.String({ description: "The file as UTF-8 text" }), path: Type.String(), size: Type.Integer({ description: "Bytes" }) },
  { additionalProperties: false },
);

export const FileWriteResult = Type.Object(
  { message: Type.String(), path: Type.String(), bytes_written: Type.Integer() },
  { additionalProperties: false },
);

export const FileInfo = Type.Object(
  {
    name: Type.String(),
    path: Type.String(),
    size: Type.Integer(),
    is_dir: Type.Boolean(),
    modified_at: Type.String({ format: "date-time" }),
    mode: Type.String({ description: "Type and permissions, as `ls -l` shows them (e.g. -rw-r--r--)" }),
  },
  { additionalProperties: false },
);

export const FileListResult = Type.Object({ files: Type.Array(FileInfo) }, { additionalProperties: false });

export const FileMessageResult = Type.Object({ message: Type.String(), path: Type.String() }, { additionalProperties: false });

export const UploadResult = Type.Object(
  { message: Type.String(), path: Type.String(), size: Type.Integer() },
  { additionalProperties: false },
);

export const UploadQuery = Type.Object({ path: Type.Optional(Path) }, { additionalProperties: true });
