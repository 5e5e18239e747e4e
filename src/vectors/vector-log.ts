// Each index's acknowledged writes since its vectors file (vector-file.ts), appended to a side log
// beside it (`<index>.vectors.log`), so that after a `kill -9` the file and the log answer the
// searches while the index loads, also before the index's first save (no file yet: the log alone,
// from its first write). The database stays the source of truth: the log is appended after each
// write commits, off the event loop (the write's answer does not wait for it), and is emptied once
// a new vectors file holds what it held. A start reads the file, then the log's entries that carry
// on from it without a gap in the write sequence (a torn or missing tail, or a gap, ends it), then
// the database's writes after that (vector-file-since.ts), and checks the sum against the index's
// vector count; when it does not add up, the rows answer.
// An entry, little-endian: a 32-byte head (magic, kind, count, dim, first sequence number, bytes
// after the head), then for an upsert each item's label and replaced label (float64, -1: none),
// where each id ends (uint32), the vectors (float32) and the ids' UTF-8 bytes; for a delete the
// labels; then the CRC-32 of the head and those bytes, and the magic again (a torn entry lacks it).
// An entry whose checksum does not match (a corrupted one, not only a torn one: a flipped byte in a
// vector passed the count check and was searched) ends the log like a torn tail: the writes from it
// on come from the database. Entries of version 1 (their own magic, no checksum: written before
// it was added) are still read, also before entries of version 2 in the same log.
import fs from "node:fs";
import zlib from "node:zlib";
import { IdList } from "./vector-ids.js";

/** "VLOG" (version 1, no checksum) and "VLG2" (version 2, with it). */
const MAGIC_V1 = 0x474f_4c56;
const MAGIC = 0x3247_4c56;
const HEAD = 32;
/** Bytes after the body: the checksum (version 2 only) and the closing magic. */
const tailOf = (magic: number) => (magic === MAGIC ? 8 : 4);
const UPSERT = 1;
const DELETE = 2;
/** Past this many bytes the log is not appended to until the next vectors file (the writes after
 * that come from the database at start): a stream of writes that never pauses long enough for a
 * save would otherwise grow it without bound. */
const MAX_BYTES = 2 ** 31;

/** One logged write batch: items with sequence numbers firstSeq, firstSeq + 1, ... */
export type LogEntry =
  | { kind: "upsert"; firstSeq: number; labels: Float64Array; replaced: Float64Array; ids: IdList; vectors: Float32Array }
  | { kind: "delete"; firstSeq: number; labels: Float64Array };

/** The side log of the vectors file `vectorsFile`. */
export const logFileOf = (vectorsFile: string) => `${vectorsFile}.log`;

function encode(e: LogEntry, dim: number): Buffer {
  const n = e.labels.length;
  const parts: Uint8Array[] = [];
  const view = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  if (e.kind === "upsert") parts.push(view(e.labels), view(e.replaced), view(e.ids.ends), view(e.vectors), e.ids.bytes);
  else parts.push(view(e.labels));
  const body = parts.reduce((a, p) => a + p.length, 0);
  const out = Buffer.allocUnsafe(HEAD + body + tailOf(MAGIC));
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(e.kind === "upsert" ? UPSERT : DELETE, 4);
  out.writeUInt32LE(n, 8);
  out.writeUInt32LE(dim, 12);
  out.writeDoubleLE(e.firstSeq, 16);
  out.writeDoubleLE(body, 24);
  let at = HEAD;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  out.writeUInt32LE(zlib.crc32(out.subarray(0, at)), at);
  out.writeUInt32LE(MAGIC, at + 4);
  return out;
}

/** The log's complete entries, in order (a torn, corrupted or foreign entry ends it); [] when there is none. */
export function readVectorLog(file: string, dim: number): LogEntry[] {
  let buf: Buffer;
  try {
    buf = fs.readFileSync(file);
  } catch {
    return [];
  }
  const out: LogEntry[] = [];
  // Copied out of the buffer: typed arrays need their own alignment.
  const copy = (at: number, bytes: number) => buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + bytes);
  for (let at = 0; at + HEAD <= buf.length; ) {
    const magic = buf.readUInt32LE(at);
    if ((magic !== MAGIC && magic !== MAGIC_V1) || buf.readUInt32LE(at + 12) !== dim) break;
    const kind = buf.readUInt32LE(at + 4);
    const n = buf.readUInt32LE(at + 8);
    const firstSeq = buf.readDoubleLE(at + 16);
    const body = buf.readDoubleLE(at + 24);
    const end = at + HEAD + body;
    if (!Number.isSafeInteger(body) || body < 0 || end + tailOf(magic) > buf.length) break;
    if (magic === MAGIC && buf.readUInt32LE(end) !== zlib.crc32(buf.subarray(at, end))) break;
    if (buf.readUInt32LE(end + tailOf(magic) - 4) !== magic) break;
    const p = at + HEAD;
    if (kind === UPSERT && body >= n * (20 + dim * 4)) {
      const labels = new Float64Array(copy(p, n * 8));
      const replaced = new Float64Array(copy(p + n * 8, n * 8));
      const ends = new Uint32Array(copy(p + n * 16, n * 4));
      const vectors = new Float32Array(copy(p + n * 20, n * dim * 4));
      const bytes = Buffer.from(buf.subarray(p + n * 20 + n * dim * 4, end));
      if (bytes.length !== (n > 0 ? (ends[n - 1] as number) : 0)) break;
      out.push({ kind: "upsert", firstSeq, labels, replaced, ids: new IdList(bytes, ends), vectors });
    } else if (kind === DELETE && body === n * 8) {
      out.push({ kind: "delete", firstSeq, labels: new Float64Array(copy(p, n * 8)) });
    } else break;
    at = end + tailOf(magic);
  }
  return out;
}

interface Log {
  file: string;
  dim: number;
  /** The appends in order, each after the one before. */
  chain: Promise<void>;
  /** Open for appending from the first append on (one write call per batch). */
  fh: fs.promises.FileHandle | undefined;
  bytes: number;
  full: boolean;
}

/** Appends each index's acknowledged writes to its log, in order, off the event loop. */
export class VectorLogs {
  private readonly logs = new Map<string, Log>();

  constructor(private readonly onError: (indexId: string, err: unknown) => void) {}

  /** Starts appending the index's writes to `file` (after what it holds). */
  track(indexId: string, file: string, dim: number): void {
    if (this.logs.has(indexId)) return;
    let bytes = 0;
    try {
      bytes = fs.statSync(file).size;
    } catch {
      // none yet
    }
    this.logs.set(indexId, { file, dim, chain: Promise.resolve(), fh: undefined, bytes, full: bytes >= MAX_BYTES });
  }

  private enqueue(indexId: string, step: (l: Log) => Promise<void>): void {
    const l = this.logs.get(indexId);
    if (!l) return;
    l.chain = l.chain.then(() => step(l)).catch((err: unknown) => this.onError(indexId, err));
  }

  /** A committed batch of upserts (items in write order, sequence numbers one after another). */
  upserted(
    indexId: string,
    written: Array<{ id: string; label: number; seq: number; replaced?: number }>,
    embeddings: Float32Array[],
  ): void {
    const l = this.logs.get(indexId);
    if (!l || written.length === 0) return;
    const vectors = new Float32Array(written.length * l.dim);
    embeddings.forEach((e, i) => {
      vectors.set(e, i * l.dim);
    });
    this.append(l, indexId, {
      kind: "upsert",
      firstSeq: (written[0] as { seq: number }).seq,
      labels: Float64Array.from(written, (w) => w.label),
      replaced: Float64Array.from(written, (w) => w.replaced ?? -1),
      ids: IdList.pack(written.map((w) => w.id)),
      vectors,
    });
  }

  /** A committed batch of deletes. */
  deleted(indexId: string, gone: Array<{ label: number; seq: number }>): void {
    const l = this.logs.get(indexId);
    if (!l || gone.length === 0) return;
    this.append(l, indexId, {
      kind: "delete",
      firstSeq: (gone[0] as { seq: number }).seq,
      labels: Float64Array.from(gone, (g) => g.label),
    });
  }

  private append(l: { dim: number; bytes: number; full: boolean }, indexId: string, e: LogEntry): void {
    if (l.full) return;
    const b = encode(e, l.dim);
    l.bytes += b.length;
    // A log stopped here stays a prefix of the writes: the rest comes from the database at start.
    if (l.bytes >= MAX_BYTES) l.full = true;
    this.enqueue(indexId, async (log) => {
      log.fh ??= await fs.promises.open(log.file, "a", 0o600);
      for (let done = 0; done < b.length; ) done += (await log.fh.write(b, done)).bytesWritten;
    });
  }

  /** Empties the log once `saved` resolves true (a vectors file holding every write logged so far:
   * the writes after it are appended after this). */
  restart(indexId: string, saved: Promise<boolean>): void {
    this.enqueue(indexId, async (l) => {
      if (!(await saved)) return;
      // (Appending: each write goes to the end, wherever that is now.)
      if (l.fh) await l.fh.truncate(0);
      else await fs.promises.rm(l.file, { force: true });
      l.bytes = 0;
      l.full = false;
    });
  }

  /** Stops logging the index and removes its log (after the appends under way). */
  async remove(indexId: string): Promise<void> {
    const l = this.logs.get(indexId);
    this.logs.delete(indexId);
    if (!l) return;
    await l.chain;
    await l.fh?.close();
    // Tracked again meanwhile (a new copy of the index): the file is that copy's log now.
    if (this.logs.get(indexId)?.file !== l.file) await fs.promises.rm(l.file, { force: true });
  }

  /** Resolves once every append so far is written. */
  async flush(): Promise<void> {
    await Promise.all([...this.logs.values()].map((l) => l.chain));
  }

  /** Writes what is queued and closes the logs (on shutdown). */
  async close(): Promise<void> {
    await this.flush();
    await Promise.all([...this.logs.values()].map((l) => l.fh?.close()));
    this.logs.clear();
  }
}
