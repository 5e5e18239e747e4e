// Benchmark of bulk file transfer through the sandbox channel: a 100 MB download and a 100 MB
// upload (multipart, streamed by the client), one at a time, against the same-run baseline of
// reading the same bytes straight from the sandbox's workspace on the host. Throughput is MB/s
// (the "throughput" column counts megabytes). Also the service's peak RSS growth while they run.
// benchStoredFiles: the same for stored files (/v1/files) against disk-copy and bare-HTTP baselines.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { multipartUpload, patternChunks } from "../test/helpers/multipart.js";
import { startServer } from "../test/helpers/server.js";
import { machineLine } from "./code-run.js";
import { keepAliveClient, printTable, publishTable, type Row } from "./lib.js";

const MB = 1_000_000;
const SIZE_MB = Number(process.env.BENCH_FILES_MB ?? 100);
const ROUNDS = Number(process.env.BENCH_FILES_ROUNDS ?? 5);

/** CPU time (user + system) of a process so far, in ms: what a transfer costs whatever the load. */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function rss(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
}

/** GET the download, counting bytes without keeping them. */
function download(port: number, key: string, id: string, file: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      {
        host: "127.0.0.1",
        port,
        path: `/v1/agents/sandboxes/${id}/download?path=${encodeURIComponent(file)}`,
        headers: { authorization: `Bearer ${key}` },
      },
      (res) => {
        let n = 0;
        res.on("data", (c: Buffer) => {
          n += c.length;
        });
        res.on("end", () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`download: ${res.statusCode}`))));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
  });
}

/** POST a multipart upload whose file part is `data`, written in 1 MiB pieces as the socket takes them. */
function upload(port: number, key: string, id: string, file: string, data: Buffer): Promise<void> {
  const boundary = "----agentbox-bench";
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="path"\r\n\r\n${file}\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="data.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: `/v1/agents/sandboxes/${id}/upload`,
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": String(head.length + data.length + tail.length),
        },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`upload: ${res.statusCode} ${Buffer.concat(parts)}`))));
      },
    );
    req.on("error", reject);
    req.write(head);
    let off = 0;
    const pump = () => {
      while (off < data.length) {
        const piece = data.subarray(off, off + 2 ** 20);
        off += piece.length;
        if (!req.write(piece)) return void req.once("drain", pump);
      }
      req.end(tail);
    };
    pump();
  });
}

export async function benchFiles(): Promise<void> {
  const server = await startServer({ env: { AGENTBOX_SANDBOX_DISK_MB: String(SIZE_MB * 3 + 64), AGENTBOX_LOG_LEVEL: "error" } });
  try {
    const call = keepAliveClient(server);
    let id = "";
    for (let i = 0; i < 50 && !id; i++) {
      const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
      if (res.status === 201) id = res.body.sandbox_id;
      else await new Promise((r) => setTimeout(r, 200));
    }
    if (!id) throw new Error("no sandbox could be created");
    const made = await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
      command: `head -c ${SIZE_MB * MB} /dev/urandom > big.bin`,
      timeout: 120_000,
    });
    if (made.status !== 200) throw new Error(`could not make the file: ${JSON.stringify(made.body)}`);
    const data = fs.readFileSync(path.join(server.workspaceDir, id, "big.bin"));
    const pid = server.process.pid as number;
    const rows: Row[] = [
      { name: `baseline: read ${SIZE_MB} MB from the workspace on the host`, samples: [] },
      { name: `download ${SIZE_MB} MB`, samples: [] },
      { name: `upload ${SIZE_MB} MB (multipart)`, samples: [] },
    ];
    const before = rss(pid);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rss(pid));
    }, 20);
    const cpu = { download: 0, upload: 0 };
    for (let r = 0; r < ROUNDS; r++) {
      let t0 = performance.now();
      fs.readFileSync(path.join(server.workspaceDir, id, "big.bin"));
      rows[0]?.samples.push(performance.now() - t0);
      t0 = performance.now();
      let c0 = cpuMs(pid);
      const n = await download(server.port, server.key, id, "big.bin");
      rows[1]?.samples.push(performance.now() - t0);
      cpu.download += cpuMs(pid) - c0;
      if (n !== data.length) throw new Error(`download returned ${n} bytes`);
      t0 = performance.now();
      c0 = cpuMs(pid);
      await upload(server.port, server.key, id, "up.bin", data);
      rows[2]?.samples.push(performance.now() - t0);
      cpu.upload += cpuMs(pid) - c0;
    }
    clearInterval(sampler);
    for (const row of rows) {
      row.ops = SIZE_MB * row.samples.length;
    }
    const table = printTable(`File transfer through the sandbox channel (${SIZE_MB} MB, ${ROUNDS} rounds; throughput in MB/s)`, rows);
    const service =
      `Service RSS: ${(before / 2 ** 20).toFixed(0)} MiB before, peak growth ${((peak - before) / 2 ** 20).toFixed(0)} MiB during the transfers. ` +
      `Service CPU per ${SIZE_MB} MB: download ${(cpu.download / ROUNDS).toFixed(0)} ms, upload ${(cpu.upload / ROUNDS).toFixed(0)} ms.`;
    process.stdout.write(`${service}\n\n`);
    await publishTable("files", `${table}\n\n${service}`, machineLine);
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  } finally {
    await server.dispose();
  }
}

/** GET a route, counting the body's bytes without keeping them. */
function getBytes(port: number, route: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path: route, headers: { authorization: `Bearer ${key}` } }, (res) => {
        let n = 0;
        res.on("data", (c: Buffer) => {
          n += c.length;
        });
        res.on("end", () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`GET ${route}: ${res.statusCode}`))));
        res.on("error", reject);
      })
      .on("error", reject);
  });
}

/**
 * Stored files (/v1/files): a multipart upload streamed to disk (checksummed, fsynced) and a
 * download, against same-run baselines: copying the same bytes on the same disk, and a bare
 * node:http server on loopback that drops an upload / serves the bytes from memory.
 */
export async function benchStoredFiles(): Promise<void> {
  const size = SIZE_MB * MB;
  const server = await startServer({ env: { AGENTBOX_LOG_LEVEL: "error", AGENTBOX_MAX_FILE_BYTES: String(size + MB) } });
  const payload = Buffer.concat([...patternChunks(size)]);
  const raw = http.createServer((req, res) => {
    if (req.method === "POST") {
      req.resume();
      req.on("end", () => res.end("{}"));
    } else {
      res.setHeader("content-length", String(payload.length));
      res.end(payload);
    }
  });
  await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
  const rawPort = (raw.address() as AddressInfo).port;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-bench-files-"));
  try {
    const source = path.join(scratch, "source.bin");
    fs.writeFileSync(source, payload);
    const up = (port: number, route: string) =>
      multipartUpload({
        port,
        path: route,
        key: server.key,
        before: { purpose: "batch" },
        file: { filename: "b.bin", size, chunks: patternChunks(size) },
      });
    const rows: Row[] = [
      { name: `baseline: copy ${SIZE_MB} MB on the same disk (+ fsync)`, samples: [] },
      { name: `baseline: upload ${SIZE_MB} MB to a bare HTTP server on loopback`, samples: [] },
      { name: `POST /v1/files ${SIZE_MB} MB (stored, sha256, fsync)`, samples: [] },
      { name: `baseline: download ${SIZE_MB} MB from a bare HTTP server on loopback`, samples: [] },
      { name: `GET /v1/files/{id}/content ${SIZE_MB} MB`, samples: [] },
    ];
    const pid = server.process.pid as number;
    // One upload first: the first transfer after start-up loads code and sizes the heap.
    const warm = (await up(server.port, "/v1/files")).body as { id: string };
    const before = rss(pid);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rss(pid));
    }, 20);
    let id = warm.id;
    for (let r = 0; r < ROUNDS; r++) {
      let t0 = performance.now();
      const copy = path.join(scratch, "copy.bin");
      fs.copyFileSync(source, copy);
      const fd = fs.openSync(copy, "r");
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      rows[0]?.samples.push(performance.now() - t0);
      fs.rmSync(copy);
      t0 = performance.now();
      await up(rawPort, "/");
      rows[1]?.samples.push(performance.now() - t0);
      await fetch(`${server.url}/v1/files/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${server.key}` } });
      t0 = performance.now();
      const res = await up(server.port, "/v1/files");
      rows[2]?.samples.push(performance.now() - t0);
      if (res.status !== 200) throw new Error(`upload: ${res.status} ${JSON.stringify(res.body)}`);
      id = (res.body as { id: string }).id;
      t0 = performance.now();
      await getBytes(rawPort, "/", server.key);
      rows[3]?.samples.push(performance.now() - t0);
      t0 = performance.now();
      const n = await getBytes(server.port, `/v1/files/${id}/content`, server.key);
      rows[4]?.samples.push(performance.now() - t0);
      if (n !== size) throw new Error(`download returned ${n} bytes`);
    }
    clearInterval(sampler);
    for (const row of rows) row.ops = SIZE_MB * row.samples.length;
    const table = printTable(`Stored files /v1/files (${SIZE_MB} MB, ${ROUNDS} rounds; throughput in MB/s)`, rows);
    const service = `Service RSS: ${(before / 2 ** 20).toFixed(0)} MiB after one warm-up upload, peak growth ${((peak - before) / 2 ** 20).toFixed(1)} MiB during ${ROUNDS} uploads and downloads of ${SIZE_MB} MB.`;
    process.stdout.write(`${service}\n\n`);
    await publishTable("stored-files", `${table}\n\n${service}`, machineLine);
  } finally {
    raw.close();
    fs.rmSync(scratch, { recursive: true, force: true });
    await server.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchFiles();
  await benchStoredFiles();
}
