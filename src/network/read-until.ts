// Reading the opening of a connection that untrusted code controls (an HTTP head, a relay's first
// line): up to a delimiter, bounded in size and in time.
import type net from "node:net";

export interface ReadUntilLimits {
  /** Bytes read without finding the delimiter before giving up with "too long". */
  max: number;
  /** How long to wait for the delimiter before giving up with undefined. */
  timeoutMs: number;
}

/**
 * Reads from `sock` until `delimiter`: resolves with the bytes before it and the bytes already read
 * after it, "too long" when more than `max` bytes came without it, or undefined when the socket ended
 * or the time ran out. The socket is left paused with this reader's listeners removed.
 */
export function readUntil(
  sock: net.Socket,
  delimiter: string,
  limits: ReadUntilLimits,
): Promise<{ before: Buffer; after: Buffer } | "too long" | undefined> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    const done = (v: { before: Buffer; after: Buffer } | "too long" | undefined) => {
      clearTimeout(timer);
      sock.off("data", onData);
      sock.off("end", onEnd);
      sock.pause();
      resolve(v);
    };
    const timer = setTimeout(() => done(undefined), limits.timeoutMs);
    const onEnd = () => done(undefined);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const at = buf.indexOf(delimiter);
      if (at >= 0) done({ before: buf.subarray(0, at), after: buf.subarray(at + delimiter.length) });
      else if (buf.length > limits.max) done("too long");
    };
    sock.on("data", onData);
    sock.on("end", onEnd);
  });
}
