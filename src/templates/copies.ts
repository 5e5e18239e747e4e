// Copies of a template's files between the nodes of a cluster: a root filesystem travels as a tar
// stream of its tree (made by the node that holds it, unpacked into a staging directory by the node
// that fetches it) and is checked against its content digest, a hash of the tree that both sides
// compute the same way, before it is adopted; a saved /home/user archive travels as it is and is
// checked against its SHA-256. Knows nothing of the cluster: the peers are given.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { type Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";

/** The nodes a template's files may be fetched from (the cluster area's view of its members). */
export interface TemplatePeers {
  /** This node's id. */
  readonly self: string;
  /** Those of `ids` that are up now, with their base URLs, in a useful order. */
  reachable(ids: readonly string[]): { id: string; url: string }[];
  /** The headers that sign a request of this node's on the cluster's internal channel. */
  sign(method: string, url: string): Record<string, string>;
}

export type CopyPart = "rootfs" | "home";

/** The internal path a node serves a template's files on (src/cluster/template-copies.ts). */
export const copyPath = (templateId: string, part: CopyPart) => `/v1/internal/templates/${encodeURIComponent(templateId)}/${part}`;

/** A failure of a copy, said as the client's error says it. */
export class CopyError extends Error {}

/**
 * The content digest of a tree: every entry below it in name order, with its kind, path and mode,
 * a file's size and bytes, a link's target. Owners and times are not in it (a root filesystem's
 * are root's, and times do not change what runs).
 */
export async function contentDigest(tree: string): Promise<string> {
  const hash = crypto.createHash("sha256");
  const walk = async (rel: string): Promise<void> => {
    const names = (await fs.promises.readdir(path.join(tree, rel))).sort();
    for (const name of names) {
      const r = rel === "" ? name : `${rel}/${name}`;
      const full = path.join(tree, r);
      const st = await fs.promises.lstat(full);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isDirectory()) {
        hash.update(`d ${mode} ${r}\0`);
        await walk(r);
      } else if (st.isSymbolicLink()) {
        hash.update(`l ${r}\0${await fs.promises.readlink(full)}\0`);
      } else if (st.isFile()) {
        hash.update(`f ${mode} ${st.size} ${r}\0`);
        for await (const chunk of fs.createReadStream(full)) hash.update(chunk as Buffer);
      } else {
        hash.update(`o ${r}\0`);
      }
    }
  };
  await walk("");
  return hash.digest("hex");
}

/** A tar stream of the tree (numeric owners); an error of tar's ends the stream with it. */
export function packTree(dir: string): Readable {
  const tar = spawn("tar", ["-c", "--numeric-owner", "-C", dir, "."], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  tar.stderr.on("data", (d: Buffer) => {
    if (stderr.length < 2000) stderr += d.toString();
  });
  const out = tar.stdout;
  tar.on("close", (code) => {
    if (code !== 0) out.destroy(new CopyError(`tar exited with ${code}: ${stderr.trim().slice(0, 300)}`));
  });
  out.on("close", () => {
    if (tar.exitCode === null) tar.kill("SIGKILL");
  });
  return out;
}

/** Passes at most `max` bytes through; more is an error. */
function bounded(max: number, what: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > max) done(new CopyError(`${what} is larger than ${Math.round(max / 2 ** 20)} MiB`));
      else done(null, chunk);
    },
  });
}

/** GETs one of a template's files from a peer over the internal channel; the answer's body, or a CopyError. */
export function requestCopy(
  peer: { id: string; url: string },
  peers: TemplatePeers,
  templateId: string,
  part: CopyPart,
  signal: AbortSignal,
): Promise<http.IncomingMessage> {
  const target = copyPath(templateId, part);
  const url = new URL(target, peer.url);
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: peers.sign("GET", target), signal }, (res) => {
      if (res.statusCode === 200) return resolve(res);
      res.resume();
      reject(new CopyError(`node ${peer.id} answered ${res.statusCode} for the template's ${part}`));
    });
    req.on("error", (err) =>
      reject(signal.aborted ? new CopyError("the fetch took too long") : new CopyError(`node ${peer.id}: ${err.message}`)),
    );
  });
}

/** Unpacks a tar stream into `dir` (an empty staging directory), at most `maxBytes` of it. */
export async function unpackTree(source: Readable, dir: string, maxBytes: number, signal: AbortSignal): Promise<void> {
  const tar = spawn("tar", ["-x", "-p", "--numeric-owner", "-C", dir], { stdio: ["pipe", "ignore", "pipe"], signal });
  let stderr = "";
  tar.stderr.on("data", (d: Buffer) => {
    if (stderr.length < 2000) stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => tar.on("close", resolve));
  tar.on("error", () => {});
  try {
    await pipeline(source, bounded(maxBytes, "the root filesystem's archive"), tar.stdin, { signal });
  } catch (err) {
    tar.kill("SIGKILL");
    await exited;
    throw err instanceof CopyError ? err : new CopyError(signal.aborted ? "the fetch took too long" : String((err as Error).message));
  }
  const code = await exited;
  if (code !== 0) throw new CopyError(`unpacking failed (tar exited with ${code}): ${stderr.trim().slice(0, 300)}`);
}

/** Writes a stream to `file` (new), at most `maxBytes`, and returns its SHA-256. */
export async function receiveFile(source: Readable, file: string, maxBytes: number, signal: AbortSignal): Promise<string> {
  const hash = crypto.createHash("sha256");
  const tap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(source, bounded(maxBytes, "the saved files' archive"), tap, fs.createWriteStream(file, { flags: "wx", mode: 0o600 }), {
      signal,
    });
  } catch (err) {
    throw err instanceof CopyError ? err : new CopyError(signal.aborted ? "the fetch took too long" : String((err as Error).message));
  }
  return hash.digest("hex");
}
