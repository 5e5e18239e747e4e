// End to end: the channel between the service and a sandbox under abuse. A large download does not
// stall other tenants; a stopped supervisor gets bounded answers, can be killed and leaves nothing,
// and hung uploads do not pin the service's memory; a symlink flipped between a file and
// /proc/self/status never lets the file API read the supervisor's /proc; /dev is not a writable
// tmpfs the size of host memory; 100 MB travel both ways intact with the service's memory flat.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import { after, before, describe, test } from "node:test";
import { median } from "../bench/lib.js";
import { assertError, createSandbox } from "./helpers/api.js";
import { cgroupsOf, createKey, eventually, mountsUnder, processesInCgroups } from "./helpers/leftovers.js";
import { multipartUpload, patternChunks } from "./helpers/multipart.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

const MB = 1_000_000;
const TMP_MB = 64;

let server: TestServer;
let call: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ env: { AGENTBOX_SANDBOX_TMP_MB: String(TMP_MB), AGENTBOX_SANDBOX_DISK_MB: "400" } });
  call = client(server);
});

after(async () => {
  await server?.dispose();
});

const base = (id: string) => `/v1/agents/sandboxes/${id}`;

async function sh(id: string, command: string, timeout = 60_000): Promise<{ stdout: string; stderr: string; exit_code: number }> {
  const res = await call<{ stdout: string; stderr: string; exit_code: number }>("POST", `${base(id)}/commands/run`, { command, timeout });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

async function kill(id: string): Promise<void> {
  const res = await call("DELETE", base(id));
  assert.ok(res.status === 200 || res.status === 204, `DELETE ${id}: ${res.status} ${JSON.stringify(res.body)}`);
}

/** The service's resident memory in bytes (VmRSS of its process). */
function serviceRss(): number {
  const status = fs.readFileSync(`/proc/${server.process.pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
}

/** Samples the service's RSS every 20 ms while `work` runs; answers the work's value and the peak growth. */
async function peakRssGrowth<T>(work: () => Promise<T>): Promise<{ value: T; growth: number }> {
  const start = serviceRss();
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, serviceRss());
  }, 20);
  try {
    const value = await work();
    peak = Math.max(peak, serviceRss());
    return { value, growth: peak - start };
  } finally {
    clearInterval(timer);
  }
}

async function download(id: string, path: string): Promise<{ status: number; body: Buffer }> {
  const res = await fetch(`${server.url}${base(id)}/download?path=${encodeURIComponent(path)}`, {
    headers: { authorization: `Bearer ${server.key}` },
  });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
}

async function upload(id: string, path: string, data: Blob, signal?: AbortSignal): Promise<{ status: number; body: unknown }> {
  const form = new FormData();
  form.append("path", path);
  form.append("file", data, "data.bin");
  const t0 = Date.now();
  const res = await fetch(`${server.url}${base(id)}/upload`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${server.key}` },
    signal,
  }).catch((err: Error) => {
    // What the connection did (a reset, a close) is in the cause: say it, and when.
    throw new Error(`upload of ${path}: ${err.message} (${String(err.cause)}) after ${Date.now() - t0} ms`, { cause: err });
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body };
}

/** The longest the service's event loop was held since the last call, in ms (its own metric, reset by each read). */
async function loopLagMaxMs(): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const m = /^agentbox_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
  assert.ok(m, "the event loop lag is in the service's /metrics");
  return Number(m[1]) * 1000;
}

/** Code runs answered so far, and those the service took over 2.5 s to answer (its own request histogram). */
async function slowRuns(): Promise<{ all: number; over: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const count = (le: string) =>
    text
      .split("\n")
      .filter(
        (l) =>
          l.startsWith("agentbox_http_request_duration_seconds_bucket{") &&
          l.includes('route="/v1/agents/sandboxes/:sandbox_id/code/run"') &&
          l.includes(`le="${le}"`),
      )
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  const all = count("+Inf");
  return { all, over: all - count("2.5") };
}

const sha = (b: Buffer) => crypto.createHash("sha256").update(b).digest("hex");

describe("the sandbox channel", () => {
  test("a 40 MB download by one tenant leaves another tenant's runs and /health fast (median within 500 ms or twice the same run's baseline median; none stalled for seconds)", async () => {
    const other = createKey(server.dataDir, "channel-b");
    const callB = client({ url: server.url, key: other.key });
    const a = await createSandbox(call);
    const b = await createSandbox(callB);
    const made = await sh(a, "head -c 40000000 /dev/urandom > big.bin && sha256sum big.bin | cut -d' ' -f1");
    const printOne = async () => {
      const t0 = performance.now();
      const res = await callB("POST", `${base(b)}/code/run`, { language: "python", code: "print(1)" });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return performance.now() - t0;
    };
    // The same run's baseline: on a busy host a print(1) can be slow with no download at all.
    await loopLagMaxMs(); // (each read starts the service's measurement again)
    const baseline: number[] = [];
    for (let i = 0; i < 30; i++) baseline.push(await printOne());
    const baselineLag = await loopLagMaxMs();
    // Medians, not the slowest sample: on a host busy with other work one request in thirty can take
    // a second with no download at all. A download that blocked the service would slow every request
    // made during it (the median), and stall one for as long as the transfer (the 5 s bound).
    const bound = Math.max(500, 2 * median(baseline));
    const stall = Math.max(5000, 4 * Math.max(...baseline));
    const slowBefore = await slowRuns();
    let downloading = true;
    const got = download(a, "big.bin").finally(() => {
      downloading = false;
    });
    const runs: number[] = [];
    const health: number[] = [];
    do {
      runs.push(await printOne());
      const h0 = performance.now();
      assert.equal((await fetch(`${server.url}/health`)).status, 200);
      health.push(performance.now() - h0);
    } while (downloading);
    const d = await got;
    // The service's own measure, which this process's load (it reads the 40 MB too) does not
    // touch: its event loop was never held long by the download (a whole file read, encoded or
    // concatenated at once would hold it for the whole transfer).
    const lag = await loopLagMaxMs();
    assert.ok(
      lag < Math.max(500, 4 * baselineLag),
      `the service's event loop stalled ${lag.toFixed(0)} ms during the download (${baselineLag.toFixed(0)} ms before it)`,
    );
    // And as the service timed them: no run of the other tenant held for the transfer.
    const slowAfter = await slowRuns();
    assert.ok(slowAfter.all - slowBefore.all >= runs.length, "the runs during the download are in the service's histogram");
    assert.equal(
      slowAfter.over - slowBefore.over,
      0,
      `${slowAfter.over - slowBefore.over} code runs took over 2.5 s in the service during the download`,
    );
    assert.equal(d.status, 200);
    assert.equal(d.body.length, 40 * MB);
    assert.equal(sha(d.body), made.stdout.trim());
    const note = `(baseline before it: median ${median(baseline).toFixed(0)} ms, slowest ${Math.max(...baseline).toFixed(0)} ms; the service's event loop held at most ${lag.toFixed(0)} ms)`;
    const during = `${runs.length} print(1) and /health during the download`;
    assert.ok(median(runs) < bound, `median print(1) of ${during}: ${median(runs).toFixed(0)} ms ${note}`);
    assert.ok(median(health) < bound, `median /health of ${during}: ${median(health).toFixed(0)} ms ${note}`);
    assert.ok(Math.max(...runs, ...health) < stall, `slowest of ${during}: ${Math.max(...runs, ...health).toFixed(0)} ms ${note}`);
    await kill(a);
    await callB("DELETE", base(b));
  });

  test("100 MB upload and download round-trip intact, with the service's memory flat", async () => {
    const id = await createSandbox(call);
    const data = crypto.randomBytes(100 * MB);
    const up = await peakRssGrowth(() => upload(id, "/home/user/big/in.bin", new Blob([data])));
    assert.equal(up.value.status, 200, JSON.stringify(up.value.body));
    assert.deepEqual(up.value.body, { message: "File uploaded", path: "/home/user/big/in.bin", size: 100 * MB });
    const inside = await sh(id, "sha256sum big/in.bin | cut -d' ' -f1");
    assert.equal(inside.stdout.trim(), sha(data));
    const down = await peakRssGrowth(() => download(id, "big/in.bin"));
    assert.equal(down.value.status, 200);
    assert.equal(sha(down.value.body), sha(data));
    // Buffered whole, either direction holds 100 MB (and copies of it) in the service at once.
    assert.ok(up.growth < 60 * MB, `service RSS grew by ${(up.growth / MB).toFixed(0)} MB during the upload`);
    assert.ok(down.growth < 60 * MB, `service RSS grew by ${(down.growth / MB).toFixed(0)} MB during the download`);
    await kill(id);
  });

  test("a symlink flipped between a file and /proc/self/status: no read returns the supervisor's /proc", async () => {
    const id = await createSandbox(call);
    await sh(
      id,
      'echo plain-file-content > real.txt; nohup python3 -c "import os\n' +
        "while True:\n" +
        "    os.symlink('/proc/self/status', 't1'); os.rename('t1', 'race')\n" +
        "    os.symlink('real.txt', 't2'); os.rename('t2', 'race')\n\" > /dev/null 2>&1 &",
    );
    await eventually(async () => (await sh(id, "test -L race && echo yes")).stdout.trim() === "yes", 5000);
    let plain = 0;
    let refused = 0;
    let leaked = 0;
    for (let i = 0; i < 300; i++) {
      const res = await call<{ content?: string }>("POST", `${base(id)}/files/read`, { path: "race" });
      if (res.status === 200 && res.body.content === "plain-file-content\n") plain++;
      else if (res.status === 200) leaked++;
      else {
        assertError(res, 400, "invalid_request");
        refused++;
      }
    }
    assert.equal(leaked, 0, `${leaked} of 300 reads returned something other than the file (plain ${plain}, refused ${refused})`);
    assert.ok(plain > 0 && refused > 0, `the race was exercised both ways (plain ${plain}, refused ${refused})`);
    await kill(id);
  });

  test("/dev is read-only and /dev/shm is capped like /tmp", async () => {
    const id = await createSandbox(call);
    const dev = await sh(id, "echo x > /dev/filler && echo wrote");
    assert.notEqual(dev.exit_code, 0);
    assert.match(dev.stderr, /Read-only file system/);
    const shm = await sh(
      id,
      "head -c 200000000 /dev/zero > /dev/shm/fill; echo rc=$?; stat -c %s /dev/shm/fill; echo ok > /dev/null && echo null-ok",
    );
    const [rc, size, nullOk] = shm.stdout.trim().split("\n");
    assert.notEqual(rc, "rc=0", shm.stderr);
    assert.match(shm.stderr, /No space left on device/);
    assert.ok(Number(size) <= TMP_MB * 2 ** 20, `/dev/shm took ${size} bytes`);
    assert.equal(nullOk, "null-ok");
    const py = await call<{ logs: { stdout: string[] | string }; error: string | null }>("POST", `${base(id)}/code/run`, {
      language: "python",
      code: "import os, multiprocessing as m\nos.remove('/dev/shm/fill')\nl = m.Lock()\nprint('lock', l.acquire())",
    });
    assert.equal(py.body.error, null, JSON.stringify(py.body));
    assert.match(JSON.stringify(py.body.logs.stdout), /lock True/);
    await kill(id);
  });

  test("a stopped supervisor: bounded answers with a clear error, hung uploads do not pin memory, DELETE cleans up", async () => {
    const id = await createSandbox(call);
    await sh(id, "echo hello > note.txt");
    // A command's shell is a child of the supervisor: it stops its parent once the command has returned.
    await sh(id, 'sup=$PPID; nohup sh -c "sleep 0.5; kill -STOP $sup" > /dev/null 2>&1 &');
    await new Promise((r) => setTimeout(r, 1500));
    const bounded = async (what: string, req: () => Promise<{ status: number; body: unknown; headers?: Headers }>) => {
      const t0 = Date.now();
      const res = await req();
      const ms = Date.now() - t0;
      assert.ok(ms < 15_000, `${what} took ${ms} ms`);
      assertError(res, 503, "sandbox_unresponsive");
      if (res.headers) assert.ok(Number(res.headers.get("retry-after")) > 0, `${what}: no Retry-After`);
    };
    await bounded("files/read", () => call("POST", `${base(id)}/files/read`, { path: "note.txt" }));
    await bounded("files/list", () => call("POST", `${base(id)}/files/list`, {}));
    await bounded("metrics", () => call("GET", `${base(id)}/metrics`));
    await bounded("context create", () => call("POST", `${base(id)}/code/contexts`, { language: "python" }));
    await bounded("download", () => call("GET", `${base(id)}/download?path=note.txt`));

    // Eight 48 MB uploads at once into the stopped sandbox (384 MB in all: a service that held
    // them would grow past the bound below). Each is smaller than what the service reads and drops
    // after answering early (64 MiB, api/bounds.ts): a larger one is cut with a reset once that is
    // read, and a client slow to read its answer (a busy machine) then sees the reset, not the 503.
    // Each request's head goes out at once (node:http): eight FormData bodies from Node's fetch in
    // one busy process had some of their heads written seconds after their connections opened, and
    // the service closes a connection that sent no head within its header timeout (10 s): the
    // client's late write then failed with EPIPE, a 'fetch failed' that was the client's delay.
    const seed = crypto.randomBytes(2 ** 20);
    const ups = await peakRssGrowth(() =>
      Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          multipartUpload({
            port: server.port,
            path: `${base(id)}/upload`,
            key: server.key,
            before: { path: `up${i}.bin` },
            file: { filename: "data.bin", size: 48 * MB, chunks: patternChunks(48 * MB, seed) },
          }),
        ),
      ),
    );
    for (const up of ups.value) assertError(up, 503, "sandbox_unresponsive");
    assert.ok(ups.growth < 200 * MB, `service RSS grew by ${(ups.growth / MB).toFixed(0)} MB with 8 hung 48 MB uploads`);

    const t0 = Date.now();
    await kill(id);
    assert.ok(Date.now() - t0 < 5000, `DELETE took ${Date.now() - t0} ms`);
    assert.ok(await eventually(() => processesInCgroups(id).length === 0 && cgroupsOf(id).length === 0, 15_000), "cgroups left");
    assert.ok(await eventually(() => mountsUnder(`${server.workspaceDir}/${id}`).length === 0, 15_000), "workspace mount left");
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
  });
});
