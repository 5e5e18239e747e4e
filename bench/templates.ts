// Benchmark of tenants' own templates: a create from a template's warm pool and a cold one (no pool),
// each beside a default create measured in the same run; the first code/run in a template's sandbox;
// the disk 100 sandboxes of one template take (they share its root filesystem: only their own
// writes add up); and the time of a small Dockerfile build and of an image import. The images are
// made on this machine and served by a local registry (test/helpers/oci-image.ts), no network.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { startTemplateRegistry, type TemplateRegistry } from "../test/helpers/oci-image.js";
import { startServer, type TestServer } from "../test/helpers/server.js";
import { machineLine } from "./code-run.js";
import { keepAliveClient, printTable, type Row, sleep, timed, publishTable } from "./lib.js";

const CREATES = Number(process.env.BENCH_TEMPLATE_CREATES ?? 30);
const SANDBOXES = Number(process.env.BENCH_TEMPLATE_SANDBOXES ?? 100);
const BUILDS = Number(process.env.BENCH_TEMPLATE_BUILDS ?? 2);
/** Which parts run: `pooled`, `cold`, `buildah` (comma-separated; buildah only where it is installed); all by default. */
const PARTS = (process.env.BENCH_TEMPLATE_PARTS ?? "pooled,cold,buildah").split(",");
/** Size of the template the disk part starts SANDBOXES sandboxes of (the figure: 500 MB). */
const TEMPLATE_MB = Number(process.env.BENCH_TEMPLATE_MB ?? 500);
/** Bytes each of the SANDBOXES sandboxes writes to its own /home/user. */
const OWN_WRITE = 256 * 1024;

type Call = ReturnType<typeof keepAliveClient>;

async function serverWith(images: TemplateRegistry, env: Record<string, string>): Promise<TestServer> {
  return startServer({
    env: {
      ...images.env,
      AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000",
      AGENTBOX_MAX_SANDBOXES_PER_TENANT: String(SANDBOXES + 20),
      // Room for the disk part's template (the tests' registry sets a small bound).
      AGENTBOX_TEMPLATE_MAX_ROOTFS_MB: String(Math.max(1024, 2 * TEMPLATE_MB)),
      ...env,
    },
  });
}

/** Starts a build and waits for its end; its wall time, ms. */
async function build(call: Call, body: Record<string, unknown>): Promise<[number, string]> {
  const t0 = performance.now();
  const res = await call<{ build_id: string; template_id: string }>("POST", "/v1/agents/templates/build", body);
  if (res.status !== 202) throw new Error(`build refused: ${JSON.stringify(res.body)}`);
  for (;;) {
    const s = await call<{ status: string; error: string | null }>("GET", `/v1/agents/templates/builds/${res.body.build_id}/status`);
    if (s.body.status === "completed") return [performance.now() - t0, res.body.template_id];
    if (s.body.status === "failed") throw new Error(`build failed: ${s.body.error}`);
    await sleep(50);
  }
}

async function create(call: Call, template?: string): Promise<[number, string]> {
  const [ms, res] = await timed(() =>
    call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", template ? { template, timeout: 600 } : { timeout: 600 }),
  );
  if (res.status !== 201) throw new Error(`create failed: ${JSON.stringify(res.body)}`);
  return [ms, res.body.sandbox_id];
}

async function waitWarm(call: Call, templateId: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const res = await call<{ warm_sandboxes?: number }>("GET", `/v1/agents/templates/${templateId}`);
    if ((res.body.warm_sandboxes ?? 0) > 0) return;
    await sleep(20);
  }
  throw new Error("the template's pool did not refill in 12 s");
}

const kill = (call: Call, ids: string[]) => Promise.all(ids.map((id) => call("DELETE", `/v1/agents/sandboxes/${id}`)));

function bytesOf(dir: string): number {
  return Number(execFileSync("du", ["-sxb", dir], { encoding: "utf8" }).split(/\s/)[0]);
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;

/** The small Dockerfile the builds take (FROM, ENV, WORKDIR, COPY, RUN) and its context. */
function benchDockerfile(images: TemplateRegistry): { dockerfile: string; context: Record<string, string> } {
  const dockerfile = [
    `FROM ${images.python}`,
    "ENV APP_MODE=bench",
    "WORKDIR /srv/app",
    "COPY app.py ./",
    `RUN python3 -c "import os, app; os.makedirs('/opt/data'); open('/opt/data/mode', 'w').write(os.environ['APP_MODE'])"`,
  ].join("\n");
  return { dockerfile, context: { "app.py": Buffer.from("VALUE = 42\n").toString("base64") } };
}

/** Pool, warm-create, first-run, disk and build figures (one server, pools on). */
async function pooled(images: TemplateRegistry, tables: string[]): Promise<void> {
  const server = await serverWith(images, {});
  const call = keepAliveClient(server);
  try {
    const { dockerfile, context } = benchDockerfile(images);
    const builds: Row[] = [{ name: "Dockerfile build (FROM + ENV, WORKDIR, COPY, RUN), request to ready", samples: [] }];
    let templateId = "";
    for (let i = 0; i < BUILDS; i++) {
      const [ms, id] = await build(call, { name: `bench-df-${i}`, dockerfile, context });
      builds[0]?.samples.push(ms);
      templateId = id;
    }

    // Paced like an agent: each create comes once its pool holds a sandbox again (the default
    // pool holds several), alternating with a default create so both see the same machine.
    const warm: Row[] = [
      { name: "POST /sandboxes from the template (its warm pool)", samples: [] },
      { name: "baseline: POST /sandboxes default (built-in warm pool)", samples: [] },
      { name: "template create + first python code/run", samples: [] },
      { name: "baseline: default create + first python code/run", samples: [] },
    ];
    const ids: string[] = [];
    await create(call, templateId).then(([, id]) => ids.push(id)); // the first create sets its pool up
    for (let i = 0; i < CREATES; i++) {
      for (const [row, template] of [
        [0, templateId],
        [1, undefined],
      ] as const) {
        if (template) await waitWarm(call, template);
        else await sleep(150);
        const [ms, id] = await create(call, template);
        const [runMs, run] = await timed(() =>
          call<{ stdout?: string }>("POST", `/v1/agents/sandboxes/${id}/code/run`, { code: "print(1)", language: "python" }),
        );
        if (run.status !== 200) throw new Error(`run failed: ${JSON.stringify(run.body)}`);
        warm[row]?.samples.push(ms);
        warm[row + 2]?.samples.push(ms + runMs);
        ids.push(id);
      }
    }
    await kill(call, ids);
    tables.push(printTable("create from a template's warm pool vs a default create (paced)", warm));
    tables.push(printTable("template builds", builds));

    // Disk: SANDBOXES sandboxes of a TEMPLATE_MB template (the small one plus a file of random
    // bytes its RUN writes), each writing OWN_WRITE bytes of its own.
    const tdir = images.templateDir;
    // A template's root filesystem is the tree named by its row's digest.
    const rootfsOf = (id: string) => {
      const db = new Database(path.join(server.dataDir, "agentbox.db"), { readonly: true });
      try {
        const row = db.prepare("SELECT rootfs FROM templates WHERE id = ?").get(id) as { rootfs: string };
        return bytesOf(path.join(tdir, "rootfs", row.rootfs));
      } finally {
        db.close();
      }
    };
    const small = rootfsOf(templateId);
    const blobMib = Math.max(0, Math.round((TEMPLATE_MB * 1e6) / 2 ** 20 - small / 2 ** 20));
    const big = await build(call, {
      name: "bench-disk",
      dockerfile: [
        dockerfile,
        `RUN python3 -c "import os; f = open('/opt/data/blob', 'wb'); [f.write(os.urandom(1 << 20)) for _ in range(${blobMib})]"`,
      ].join("\n"),
      context,
    });
    const rootfs = rootfsOf(big[1]);
    const before = bytesOf(tdir);
    const many: string[] = [];
    for (let i = 0; i < SANDBOXES; i++) many.push((await create(call, big[1]))[1]);
    let own = 0;
    for (const id of many) {
      // The image has python and sh only: python writes and counts (blocks used, as du does).
      const code = [
        "import os",
        `open('/home/user/own.bin', 'wb').write(os.urandom(${OWN_WRITE}))`,
        "print(sum(os.lstat(os.path.join(d, f)).st_blocks * 512 for top in ('/home/user', '/tmp') for d, _, fs in os.walk(top) for f in fs))",
      ].join("\n");
      const r = await call<{ logs: { stdout: string }; error: string | null }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
        code,
        language: "python",
      });
      if (r.status !== 200 || r.body.error) throw new Error(`write failed: ${JSON.stringify(r.body)}`);
      own += Number(r.body.logs.stdout.trim());
    }
    const after = bytesOf(tdir);
    await kill(call, many);
    const lines = [
      `### disk of ${SANDBOXES} sandboxes of one ${mib(rootfs)} template`,
      "",
      "| measure | bytes |",
      "| --- | ---: |",
      `| the template's root filesystem (built for this part; ${(big[0] / 1000).toFixed(1)} s to build) | ${mib(rootfs)} |`,
      `| template directory before the ${SANDBOXES} sandboxes (every template built in this run) | ${mib(before)} |`,
      `| template directory with the ${SANDBOXES} sandboxes running | ${mib(after)} |`,
      `| the sandboxes' own files (/home/user and /tmp, ${OWN_WRITE / 1024} KiB written by each) | ${mib(own)} |`,
      `| what ${SANDBOXES} copies of the root filesystem would take | ${mib(SANDBOXES * rootfs)} |`,
    ];
    process.stdout.write(`${lines.join("\n")}\n\n`);
    tables.push(lines.join("\n"));
  } finally {
    await server.dispose();
  }
}

/** Cold creates: a server whose templates have no warm pools (AGENTBOX_TEMPLATE_POOL_IDLE_S=0); and an image import. */
async function cold(images: TemplateRegistry, tables: string[]): Promise<void> {
  const server = await serverWith(images, { AGENTBOX_TEMPLATE_POOL_IDLE_S: "0" });
  const call = keepAliveClient(server);
  try {
    const [importMs, templateId] = await build(call, { name: "bench-image", docker_image: images.python });
    const rows: Row[] = [
      { name: "POST /sandboxes from a template, cold (no pool: started for the create)", samples: [] },
      { name: "baseline: POST /sandboxes default (built-in warm pool)", samples: [] },
    ];
    const ids: string[] = [];
    for (let i = 0; i < CREATES; i++) {
      for (const [row, template] of [
        [0, templateId],
        [1, undefined],
      ] as const) {
        await sleep(150);
        const [ms, id] = await create(call, template);
        rows[row]?.samples.push(ms);
        ids.push(id);
      }
    }
    await kill(call, ids);
    rows.push({ name: "image import (pull, verify, unpack, adopt) of the ~70 MiB python image", samples: [importMs] });
    tables.push(printTable("cold create from a template vs a default create (paced)", rows));
  } finally {
    await server.dispose();
  }
}

/**
 * The same Dockerfile built by the service (request to ready) and by `buildah bud` on this host,
 * alternately, each from scratch (buildah on fresh storage, so it pulls the base as the service
 * does), and what each keeps on disk. buildah runs as root with `--isolation chroot` (rootless
 * buildah needs subordinate uids this host has not): the image and the Dockerfile are this
 * benchmark's own, nothing untrusted.
 */
async function versusBuildah(images: TemplateRegistry, tables: string[]): Promise<void> {
  const driver = process.env.BENCH_BUILDAH_DRIVER ?? "vfs";
  const server = await serverWith(images, {});
  const call = keepAliveClient(server);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-buildah-"));
  try {
    const { dockerfile, context } = benchDockerfile(images);
    const ctx = path.join(work, "context");
    fs.mkdirSync(ctx);
    fs.writeFileSync(path.join(ctx, "Dockerfile"), dockerfile);
    for (const [name, b64] of Object.entries(context)) fs.writeFileSync(path.join(ctx, name), Buffer.from(b64, "base64"));
    const rows: Row[] = [
      { name: "this service: POST /templates/build (dockerfile) to ready", samples: [] },
      { name: `buildah bud --isolation chroot (storage driver ${driver}, fresh storage)`, samples: [] },
    ];
    let ownBytes = 0;
    let buildahImage = "";
    let buildahBytes = 0;
    // The base imported once and kept (a template uses it): each build's own root is then the one
    // new directory (a build removes the base it pulled only when no template uses it).
    await build(call, { name: "bench-vs-base", docker_image: images.python });
    const roots = path.join(images.templateDir, "rootfs");
    const before = new Set(fs.readdirSync(roots));
    for (let i = 0; i < BUILDS; i++) {
      const [ms, templateId] = await build(call, { name: `bench-vs-${i}`, dockerfile, context });
      rows[0]?.samples.push(ms);
      const made = fs.readdirSync(roots).filter((d) => !before.has(d));
      ownBytes = Math.max(...made.map((d) => bytesOf(path.join(roots, d))));
      await call("DELETE", `/v1/agents/templates/${templateId}`);
      const storage = path.join(work, `storage-${i}`);
      const buildah = (args: string[]) =>
        execFileSync("/usr/bin/buildah", ["--root", storage, "--runroot", `${storage}.run`, "--storage-driver", driver, ...args], {
          encoding: "utf8",
          stdio: ["ignore", "pipe", "pipe"],
        });
      const t0 = performance.now();
      buildah([
        "bud",
        "--isolation",
        "chroot",
        "--tls-verify=false",
        "--layers=false",
        "-q",
        "-t",
        `bench-${i}`,
        "-f",
        path.join(ctx, "Dockerfile"),
        ctx,
      ]);
      rows[1]?.samples.push(performance.now() - t0);
      buildahImage = buildah(["images", "--format", "{{.Size}}", `bench-${i}`]).trim();
      buildahBytes = bytesOf(storage);
      buildah(["rmi", "--all", "--force"]);
      fs.rmSync(storage, { recursive: true, force: true });
      fs.rmSync(`${storage}.run`, { recursive: true, force: true });
    }
    tables.push(printTable("the same Dockerfile: this service vs buildah (alternately, each from scratch)", rows));
    const lines = [
      "| what is kept | size |",
      "| --- | ---: |",
      `| this service: the template's root filesystem (one tree: the image plus the RUN's writes and the bytecode the build made) | ${mib(ownBytes)} |`,
      `| buildah: the image as it reports it | ${buildahImage} |`,
      `| buildah: its storage on disk (${driver}: base layer and the new layer) | ${mib(buildahBytes)} |`,
    ];
    process.stdout.write(`${lines.join("\n")}\n\n`);
    tables.push(lines.join("\n"));
  } finally {
    await server.dispose();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

export async function benchTemplates(): Promise<string> {
  const machine = await machineLine();
  process.stdout.write(`${machine}\n\n`);
  const images = await startTemplateRegistry();
  const tables: string[] = [];
  try {
    if (PARTS.includes("pooled")) await pooled(images, tables);
    if (PARTS.includes("cold")) await cold(images, tables);
    if (PARTS.includes("buildah") && fs.existsSync("/usr/bin/buildah")) await versusBuildah(images, tables);
  } finally {
    await images.stop();
  }
  await publishTable("templates", tables.join("\n\n"), machine);
  return [machine, ...tables].join("\n\n");
}

if (import.meta.url === `file://${process.argv[1]}`) await benchTemplates();
