// "The internet" for network tests and the egress bench: an HTTP server on loopback that the
// service's resolver override maps test names to. Serves a greeting, a byte stream of any size,
// a tiny package index (one pure-python wheel) that pip can install from, and a one-package npm registry.
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import type net from "node:net";

/** A wheel of package `tinypkg` 0.1 whose module sets VALUE = 42 (built by python's zipfile on the host). */
function tinyWheel(): Buffer {
  const script = `
import base64, hashlib, io, sys, zipfile
files = {
  "tinypkg/__init__.py": b"VALUE = 42\\n",
  "tinypkg-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 0.1\\n",
  "tinypkg-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = ""
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += "%s,sha256=%s,%d\\n" % (name, digest, len(data))
record += "tinypkg-0.1.dist-info/RECORD,,\\n"
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
    z.writestr("tinypkg-0.1.dist-info/RECORD", record)
sys.stdout.buffer.write(buf.getvalue())
`;
  return execFileSync("/usr/bin/python3", ["-c", script]);
}

export interface Internet {
  server: http.Server;
  port: number;
  /** Requests served, by path. */
  hits: string[];
  close(): Promise<void>;
}

/** An npm package `tinynpm` 1.0.0 whose module exports {value: 42}, as the registry's tarball. */
function tinyNpmTarball(): Buffer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-npm-"));
  try {
    fs.mkdirSync(path.join(dir, "package"));
    fs.writeFileSync(path.join(dir, "package", "package.json"), JSON.stringify({ name: "tinynpm", version: "1.0.0", main: "index.js" }));
    fs.writeFileSync(path.join(dir, "package", "index.js"), "module.exports = { value: 42 };\n");
    return execFileSync("tar", ["czf", "-", "-C", dir, "package"]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A self-signed certificate for `name` (openssl on the host), PEM key and certificate. */
export function selfSignedCert(name: string): { key: string; cert: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-cert-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        `/CN=${name}`,
        "-addext",
        `subjectAltName=DNS:${name}`,
        "-keyout",
        path.join(dir, "key.pem"),
        "-out",
        path.join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    return { key: fs.readFileSync(path.join(dir, "key.pem"), "utf8"), cert: fs.readFileSync(path.join(dir, "cert.pem"), "utf8") };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** `tls`: serve HTTPS with this key and certificate instead of HTTP. */
export async function startInternet(tls?: { key: string; cert: string }): Promise<Internet> {
  const wheel = tinyWheel();
  const tarball = tinyNpmTarball();
  const integrity = `sha512-${crypto.createHash("sha512").update(tarball).digest("base64")}`;
  const hits: string[] = [];
  /** The last /bytes/N body, kept: the benchmark asks for the same size many times. */
  let blob = Buffer.alloc(0);
  const handler: http.RequestListener = (req, res) => {
    const url = req.url ?? "/";
    hits.push(url);
    const bytes = /^\/bytes\/(\d{1,9})$/.exec(url);
    if (bytes) {
      const n = Math.min(Number(bytes[1]), 64 * 2 ** 20);
      if (blob.length !== n) blob = Buffer.alloc(n, 120);
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": n });
      return res.end(blob);
    }
    if (url === "/simple/" || url === "/simple/tinypkg/") {
      const body =
        url === "/simple/"
          ? '<html><body><a href="/simple/tinypkg/">tinypkg</a></body></html>'
          : '<html><body><a href="/files/tinypkg-0.1-py3-none-any.whl">tinypkg-0.1-py3-none-any.whl</a></body></html>';
      res.writeHead(200, { "content-type": "text/html" });
      return res.end(body);
    }
    if (url === "/tinynpm") {
      const tarballUrl = `http://${req.headers.host}/tinynpm/-/tinynpm-1.0.0.tgz`;
      const doc = {
        name: "tinynpm",
        "dist-tags": { latest: "1.0.0" },
        versions: { "1.0.0": { name: "tinynpm", version: "1.0.0", dist: { tarball: tarballUrl, integrity } } },
      };
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify(doc));
    }
    if (url === "/tinynpm/-/tinynpm-1.0.0.tgz") {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": tarball.length });
      return res.end(tarball);
    }
    if (url === "/files/tinypkg-0.1-py3-none-any.whl") {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": wheel.length });
      return res.end(wheel);
    }
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`hello from ${req.headers.host} ${url}`);
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    server,
    port,
    hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
