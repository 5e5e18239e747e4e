// Each index's vectors as one flat file beside its graph (`<index>.vectors`), so that a search
// while the index's records load after a start is answered from a file read at disk speed instead
// of a pass over the database's rows (record-scan-main.ts). Written whole when the index is saved
// (idle, and on a graceful stop); it covers every write up to `upTo`. A file older than its index
// (writes after the save, then a `kill -9`) is brought up to date after a start with the writes
// after `upTo` (its side log, vector-log.ts, then the database, vector-file-since.ts).
// Layout (version 2), little-endian: a 64-byte header, then the collection's slots as they are
// (`slots` × `dim` float32, a freed slot's vector left in place) read straight into one
// Float32Array, each slot's label (float64, -1 for a freed slot), where each slot's id ends
// (uint32), and the ids' UTF-8 bytes one after another (vector-ids.ts). Nothing is parsed per
// vector: at 1M × 128 the read is four reads into four buffers. Version 1 (the same, but the ids
// as one JSON array) is still read; the next save writes version 2.
import fs from "node:fs";
import { IdList } from "./vector-ids.js";

const MAGIC_V1 = "AGBXVEC1";
const MAGIC = "AGBXVEC2";
const HEADER = 64;
/** Bytes per read or write call: between pieces the reading thread answers other indexes' searches. */
const PIECE = 1 << 26;

export interface VectorFileHeader {
  version: 1 | 2;
  dim: number;
  /** Slots in the file (live and freed). */
  slots: number;
  /** Live vectors among them. */
  live: number;
  /** Every write up to this sequence number is in the file, none after. */
  upTo: number;
  /** Bytes of the ids (version 2: their UTF-8 bytes; version 1: their JSON array). */
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
  ids: IdList;
}

function expectedSize(h: VectorFileHeader): number {
  return HEADER + h.slots * h.dim * 4 + h.slots * 8 + (h.version === 2 ? h.slots * 4 : 0) + h.idBytes;
}

const bytesOf = (a: ArrayBufferView, length = a.byteLength) => new Uint8Array(a.buffer, a.byteOffset, length);

/**
 * Writes `s` to `file` (through a temporary file renamed over it, synced first), off the event
 * loop. `stillSame` is asked once the bytes are written: `vecs` is written from the collection's
 * own array, so a write to the index meanwhile (false) discards the file instead. Resolves to
 * whether the file was written.
 */
export async function writeVectorFile(file: string, s: VectorSlots, stillSame: () => boolean): Promise<boolean> {
  const ids = IdList.pack(s.ids);
  const header = Buffer.alloc(HEADER);
  header.write(MAGIC, 0, "latin1");
  header.writeUInt32LE(s.dim, 8);
  header.writeDoubleLE(s.slots, 16);
  header.writeDoubleLE(s.live, 24);
  header.writeDoubleLE(s.upTo, 32);
  header.writeDoubleLE(ids.bytes.length, 40);
  const parts = [header, bytesOf(s.vecs, s.slots * s.dim * 4), bytesOf(s.labels, s.slots * 8), bytesOf(ids.ends), ids.bytes];
  const tmp = `${file}.tmp`;
  const fh = await fs.promises.open(tmp, "w", 0o600);
  let ok = false;
  try {
    let at = 0;
    for (const part of parts) {
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

/** The file's header when it is a complete vectors file (either version), else undefined. */
export function readVectorFileHeader(file: string): VectorFileHeader | undefined {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, "r");
    const b = Buffer.alloc(HEADER);
    if (fs.readSync(fd, b, 0, HEADER, 0) !== HEADER) return undefined;
    const magic = b.toString("latin1", 0, 8);
    if (magic !== MAGIC && magic !== MAGIC_V1) return undefined;
    const h: VectorFileHeader = {
      version: magic === MAGIC ? 2 : 1,
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

/** Reads the whole file (in the record scanner's thread) straight into its arrays, a piece at a
 * time. Undefined when it is not a complete one. */
export async function readVectorFile(file: string): Promise<VectorFileData | undefined> {
  const h = readVectorFileHeader(file);
  if (!h) return undefined;
  const fh = await fs.promises.open(file, "r");
  try {
    const vecs = new Float32Array(h.slots * h.dim);
    const labels = new Float64Array(h.slots);
    const ends = new Uint32Array(h.version === 2 ? h.slots : 0);
    const idBytes = Buffer.allocUnsafe(h.idBytes);
    let at = HEADER;
    for (const part of [bytesOf(vecs), bytesOf(labels), bytesOf(ends), idBytes]) {
      let done = 0;
      while (done < part.length) {
        const { bytesRead } = await fh.read(part, done, Math.min(part.length - done, PIECE), at + done);
        if (bytesRead === 0) return undefined;
        done += bytesRead;
      }
      at += part.length;
    }
    let ids: IdList;
    if (h.version === 2) {
      ids = new IdList(idBytes, ends);
      if (h.slots > 0 && ends[h.slots - 1] !== h.idBytes) return undefined;
    } else {
      const list = JSON.parse(idBytes.toString("utf8")) as Array<string | null>;
      if (list.length !== h.slots) return undefined;
      ids = IdList.pack(list);
    }
    return { ...h, vecs, labels, ids };
  } finally {
    await fh.close();
  }
}
