// Each index's vectors as one flat file beside its graph (`<index>.vectors`), so that a search
// while the index's records load after a start is answered from a file read at disk speed instead
// of a pass over the database's rows (record-scan-main.ts). Written whole when the index is saved
// (idle, and on a graceful stop); it covers every write up to `upTo`. A file older than its index
// (writes after the save, then a `kill -9`) is brought up to date after a start with the writes
// after `upTo` (vector-file-since.ts); the tombstones after it are kept until the next file is
// written. Layout, little-endian: a 64-byte header, then the collection's slots as they are
// (`slots` × `dim` float32, a freed slot's vector left in place), each slot's label (float64, -1
// for a freed slot), and the slots' ids as one JSON array (null for a freed slot).
import fs from "node:fs";

const MAGIC = "AGBXVEC1";
const HEADER = 64;
/** Bytes per read or write call. */
const PIECE = 1 << 26;

export interface VectorFileHeader {
  dim: number;
  /** Slots in the file (live and freed). */
  slots: number;
  /** Live vectors among them. */
  live: number;
  /** Every write up to this sequence number is in the file, none after. */
  upTo: number;
  idBytes: number;
}

/** A snapshot of a collection's slots: `vecs` is read while the file is written (see writeVectorFile). */
export interface VectorSlots {
  dim: number;
  upTo: number;
  slots: number;
  live: number;
  vecs: Float32Array;
  /** Label per slot, -1 for a freed one. */
  labels: Float64Array;
  /** Id per slot (`slots` of them), undefined for a freed one. */
  ids: Array<string | undefined>;
}

/** The file's full contents, as the record scanner reads it. */
export interface VectorFileData extends VectorFileHeader {
  vecs: Float32Array;
  labels: Float64Array;
  ids: Array<string | null>;
}

function expectedSize(h: VectorFileHeader): number {
  return HEADER + h.slots * h.dim * 4 + h.slots * 8 + h.idBytes;
}

/**
 * Writes `s` to `file` (through a temporary file renamed over it, synced first), off the event
 * loop. `stillSame` is asked once the bytes are written: `vecs` is written from the collection's
 * own array, so a write to the index meanwhile (false) discards the file instead. Resolves to
 * whether the file was written.
 */
export async function writeVectorFile(file: string, s: VectorSlots, stillSame: () => boolean): Promise<boolean> {
  const ids = Buffer.from(JSON.stringify(s.ids));
  const header = Buffer.alloc(HEADER);
  header.write(MAGIC, 0, "latin1");
  header.writeUInt32LE(s.dim, 8);
  header.writeDoubleLE(s.slots, 16);
  header.writeDoubleLE(s.live, 24);
  header.writeDoubleLE(s.upTo, 32);
  header.writeDoubleLE(ids.length, 40);
  const vecs = new Uint8Array(s.vecs.buffer, s.vecs.byteOffset, s.slots * s.dim * 4);
  const labels = new Uint8Array(s.labels.buffer, s.labels.byteOffset, s.slots * 8);
  const tmp = `${file}.tmp`;
  const fh = await fs.promises.open(tmp, "w", 0o600);
  let ok = false;
  try {
    let at = 0;
    for (const part of [header, vecs, labels, ids]) {
      // In pieces: one write of a large index's vectors could be cut short (Linux writes at most ~2 GiB at once).
      for (let done = 0; done < part.length; ) {
        const { bytesWritten } = await fh.write(part, done, Math.min(part.length - done, PIECE), at);
        done += bytesWritten;
        at += bytesWritten;
      }
    }
    // On disk before it replaces the old file: a file that is renamed but not written (power loss)
    // would be trusted by the next start.
    await fh.datasync();
    ok = stillSame();
  } finally {
    await fh.close();
    if (ok) await fs.promises.rename(tmp, file);
    else await fs.promises.rm(tmp, { force: true });
  }
  return ok;
}

/** The file's header when it is a complete vectors file, else undefined. */
export function readVectorFileHeader(file: string): VectorFileHeader | undefined {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, "r");
    const b = Buffer.alloc(HEADER);
    if (fs.readSync(fd, b, 0, HEADER, 0) !== HEADER || b.toString("latin1", 0, 8) !== MAGIC) return undefined;
    const h: VectorFileHeader = {
      dim: b.readUInt32LE(8),
      slots: b.readDoubleLE(16),
      live: b.readDoubleLE(24),
      upTo: b.readDoubleLE(32),
      idBytes: b.readDoubleLE(40),
    };
    return fs.fstatSync(fd).size === expectedSize(h) ? h : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Reads the whole file (in the record scanner's thread), a piece at a time: between pieces the
 * thread answers the searches of other indexes. Undefined when it is not a complete one. */
export async function readVectorFile(file: string): Promise<VectorFileData | undefined> {
  const h = readVectorFileHeader(file);
  if (!h) return undefined;
  const fh = await fs.promises.open(file, "r");
  try {
    const vecs = new Float32Array(h.slots * h.dim);
    const labels = new Float64Array(h.slots);
    const idBytes = Buffer.alloc(h.idBytes);
    let at = HEADER;
    for (const part of [new Uint8Array(vecs.buffer), new Uint8Array(labels.buffer), idBytes]) {
      let done = 0;
      while (done < part.length) {
        const { bytesRead } = await fh.read(part, done, Math.min(part.length - done, PIECE), at + done);
        if (bytesRead === 0) return undefined;
        done += bytesRead;
      }
      at += part.length;
    }
    const ids = JSON.parse(idBytes.toString("utf8")) as Array<string | null>;
    if (ids.length !== h.slots) return undefined;
    return { ...h, vecs, labels, ids };
  } finally {
    await fh.close();
  }
}
