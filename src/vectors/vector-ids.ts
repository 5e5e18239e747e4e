// The ids of a vectors file's slots (vector-file.ts), packed: their UTF-8 bytes one after another
// and where each slot's ends. A million ids read this way is two reads into two buffers, where a
// JSON array of them took a parse of every one (~0.3 s at 1M on a busy machine); a search decodes
// only its hits' ids.

export class IdList {
  constructor(
    /** Every slot's id, one after another (a freed slot's is empty). */
    readonly bytes: Buffer,
    /** The end of each slot's id in `bytes` (its start is the previous slot's end). */
    readonly ends: Uint32Array,
  ) {}

  get length(): number {
    return this.ends.length;
  }

  /** The id of slot `i` (empty for a freed slot). */
  get(i: number): string {
    return this.bytes.toString("utf8", i === 0 ? 0 : (this.ends[i - 1] as number), this.ends[i] as number);
  }

  /** Packs ids (undefined or null for a freed slot). */
  static pack(ids: ReadonlyArray<string | undefined | null>): IdList {
    const ends = new Uint32Array(ids.length);
    let total = 0;
    for (let i = 0; i < ids.length; i++) {
      total += Buffer.byteLength(ids[i] ?? "");
      if (total > 0xffff_ffff) throw new Error("the ids of the index's vectors exceed 4 GiB");
      ends[i] = total;
    }
    const bytes = Buffer.allocUnsafe(total);
    let at = 0;
    for (const id of ids) if (id) at += bytes.write(id, at, "utf8");
    return new IdList(bytes, ends);
  }
}
