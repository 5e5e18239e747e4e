// The snapshot-archive part of the supervisor protocol (runtime/agentbox_rt/archive.py): a tar of
// /home/user made or unpacked inside the sandbox, streamed through the channel in chunks. Its
// requests, and the one `archive` event that answers them (bytes come as ordinary `chunk` events),
// decoded field by field: the sandbox is untrusted.

export type ArchiveRequest =
  /** Starts making an archive of /home/user (refused when its files add up to more than `limit` bytes). */
  | { op: "archive_create"; limit: number }
  /** Starts unpacking an archive into /home/user. */
  | { op: "archive_extract"; limit: number }
  /** The next bytes (at most `max`) of an archive being made: `chunk`, or `archive` with end=true at its end. */
  | { op: "archive_read"; handle: number; max: number }
  /** Bytes (the body) of an archive being unpacked: `ok` once they are in the sandbox. */
  | { op: "archive_write"; handle: number }
  /** No more bytes: answered by `archive` (end=true) once the unpacking is done. */
  | { op: "archive_finish"; handle: number }
  /** Abandons an archive (its process is killed): `ok`. */
  | { op: "archive_close"; handle: number };

/** `ok`, or why the archive failed: too_large, changed (a file vanished or changed while copied), no_space, invalid, busy, error. */
export type ArchiveStatus = "ok" | "too_large" | "changed" | "no_space" | "invalid" | "busy" | "error";

const STATUSES = new Set<ArchiveStatus>(["ok", "too_large", "changed", "no_space", "invalid", "busy", "error"]);

export interface ArchiveEvent {
  ev: "archive";
  id: string;
  status: ArchiveStatus;
  /** The archive is finished (made, unpacked or failed); its handle is gone. */
  end: boolean;
  handle?: number;
  /** Entries in the archive (the sandbox's count: informational). */
  files?: number;
  message?: string;
}

export function decodeArchiveEvent(id: string, h: Record<string, unknown>): ArchiveEvent {
  const status = STATUSES.has(h.status as ArchiveStatus) ? (h.status as ArchiveStatus) : "error";
  const e: ArchiveEvent = { ev: "archive", id, status, end: h.end === true };
  if (typeof h.handle === "number" && Number.isSafeInteger(h.handle)) e.handle = h.handle;
  if (typeof h.files === "number" && Number.isSafeInteger(h.files) && h.files >= 0) e.files = h.files;
  if (typeof h.message === "string") e.message = h.message.slice(0, 1000);
  return e;
}
