// Reading the enveloped messages of a Connect client stream (StreamInput) from a request body as it
// arrives. A client chooses how its bytes are cut, so the work done per piece must not depend on how
// much of a message came before it: pieces are kept in a list and joined once, when their message
// is whole (re-joining the whole buffer on every piece made a slow 8 MiB message quadratic and
// starved the event loop for every tenant). A message may come in at most `maxPieces` pieces.
import type { Readable } from "node:stream";
import { ApiError, invalid } from "../errors.js";

const HEAD = 5;

export interface EnvelopeLimits {
  /** Largest JSON of one message, in bytes. */
  maxMessage: number;
  /** Most pieces one message (with its head) may arrive in. */
  maxPieces: number;
}

/** Bytes received but not yet taken as messages: the pieces as they came, copied only when taken. */
export class PieceQueue {
  private pieces: Buffer[] = [];
  /** Offset into pieces[0] of the first byte not yet taken. */
  private offset = 0;
  /** Bytes held (after `offset`). */
  length = 0;
  /** Bytes copied so far by take() (for tests: it stays linear in the bytes received). */
  copied = 0;

  push(piece: Buffer): void {
    if (piece.length === 0) return;
    this.pieces.push(piece);
    this.length += piece.length;
  }

  /** Pieces held: the count a slow sender makes grow. */
  get count(): number {
    return this.pieces.length;
  }

  /** The byte at `index` without taking anything (index < length). */
  byteAt(index: number): number {
    let i = index + this.offset;
    for (const piece of this.pieces) {
      if (i < piece.length) return piece[i] as number;
      i -= piece.length;
    }
    throw new RangeError("byteAt past the end");
  }

  /** Removes and returns the next `n` bytes (n <= length): a view when they lie in one piece, else one copy. */
  take(n: number): Buffer {
    const first = this.pieces[0];
    if (first && first.length - this.offset >= n) {
      const out = first.subarray(this.offset, this.offset + n);
      this.advance(n);
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const piece = this.pieces[0] as Buffer;
      const part = Math.min(n - filled, piece.length - this.offset);
      piece.copy(out, filled, this.offset, this.offset + part);
      filled += part;
      this.advance(part);
    }
    this.copied += n;
    return out;
  }

  private advance(n: number): void {
    this.length -= n;
    this.offset += n;
    while (this.pieces.length > 0 && this.offset >= (this.pieces[0] as Buffer).length) {
      this.offset -= (this.pieces[0] as Buffer).length;
      this.pieces.shift();
    }
  }
}

/** One message's JSON, which must be an object (or null: an empty message). */
export function parseMessage(json: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(json.toString("utf8"));
  } catch {
    throw invalid("A Connect message is not valid JSON");
  }
  return asMessage(value);
}

export function asMessage(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) throw invalid("A Connect message must be a JSON object");
  return value as Record<string, unknown>;
}

/**
 * The enveloped messages of `body`, each as soon as it is whole: at most `maxMessage` bytes each,
 * uncompressed, each in at most `maxPieces` pieces. `queue` is for tests (to count copies).
 */
export async function* clientMessages(
  body: AsyncIterable<unknown> | Readable,
  limits: EnvelopeLimits,
  queue: PieceQueue = new PieceQueue(),
): AsyncGenerator<Record<string, unknown>> {
  for await (const chunk of body) {
    queue.push(chunk as Buffer);
    while (queue.length >= HEAD) {
      if (queue.byteAt(0) !== 0) throw invalid("Compressed or end-of-stream envelopes are not taken from a client");
      const len = ((queue.byteAt(1) << 24) >>> 0) + (queue.byteAt(2) << 16) + (queue.byteAt(3) << 8) + queue.byteAt(4);
      if (len > limits.maxMessage) throw new ApiError("payload_too_large", `A message is larger than ${limits.maxMessage} bytes`);
      if (queue.length < HEAD + len) {
        if (queue.count > limits.maxPieces)
          throw invalid(`A message came in more than ${limits.maxPieces} pieces; send it in larger writes`);
        break;
      }
      queue.take(HEAD);
      yield parseMessage(queue.take(len));
    }
  }
  if (queue.length > 0) throw invalid("The stream ended inside a message");
}
