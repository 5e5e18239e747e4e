// The contract of TemplateStore: what any implementation must do.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { BuildRecord, TemplateRecord, TemplateStore } from "../../src/templates/store.js";

const T0 = "2026-01-01T00:00:00.000Z";

const template = (id: string, name: string, over: Partial<TemplateRecord> = {}): TemplateRecord => ({
  id,
  tenantId: "t1",
  name,
  description: "",
  vcpuCount: 1,
  memoryMb: 512,
  diskMb: 1024,
  baseImage: null,
  environment: {},
  workdir: null,
  tags: {},
  rootfs: null,
  home: null,
  python: null,
  state: "building",
  createdAt: T0,
  updatedAt: T0,
  ...over,
});

const build = (id: string, templateId: string, over: Partial<BuildRecord> = {}): BuildRecord => ({
  id,
  templateId,
  tenantId: "t1",
  status: "pending",
  phase: "initializing",
  progress: 0,
  error: null,
  startedAt: null,
  completedAt: null,
  createdAt: T0,
  nodeId: "n1",
  ...over,
});

export function describeTemplateStoreContract(name: string, makeStore: () => Promise<TemplateStore>): void {
  describe(`TemplateStore contract: ${name}`, () => {
    test("insert and read back by id and by the tenant's name (every field round-trips); not found", async () => {
      const store = await makeStore();
      const t = template("tpl_a", "py", {
        description: "a python",
        vcpuCount: 2,
        memoryMb: 256,
        diskMb: 2048,
        baseImage: "docker.io/library/python:3.12",
        environment: { A: "1", B: "two words" },
        workdir: "/app",
        tags: { team: "x" },
      });
      assert.equal(await store.insertTemplate(t), true);
      assert.deepEqual(await store.template("tpl_a"), t);
      assert.deepEqual(await store.templateByName("t1", "py"), t);
      assert.equal(await store.template("nothing"), undefined);
      assert.equal(await store.templateByName("t2", "py"), undefined, "another tenant's name");
      assert.equal(await store.templateByName("t1", "nothing"), undefined);
    });

    test("a tenant's names are unique (checked by the insert), other tenants' are not", async () => {
      const store = await makeStore();
      assert.equal(await store.insertTemplate(template("tpl_a", "py")), true);
      assert.equal(await store.insertTemplate(template("tpl_b", "py")), false, "same tenant, same name");
      assert.equal(await store.insertTemplate(template("tpl_c", "py", { tenantId: "t2" })), true);
      assert.equal(await store.template("tpl_b"), undefined);
      assert.equal(await store.countTemplates("t1"), 1);
    });

    test("concurrent inserts of one name: exactly one wins", async () => {
      const store = await makeStore();
      const won = await Promise.all(Array.from({ length: 5 }, (_, i) => store.insertTemplate(template(`tpl_${i}`, "same"))));
      assert.equal(won.filter(Boolean).length, 1);
      assert.equal(await store.countTemplates("t1"), 1);
    });

    test("count covers every state; the ready list holds only ready ones, oldest first, of that tenant", async () => {
      const store = await makeStore();
      assert.equal(await store.countTemplates("t1"), 0);
      assert.deepEqual(await store.readyTemplates("t1"), []);
      await store.insertTemplate(template("tpl_new", "new", { state: "ready", createdAt: "2026-01-03T00:00:00.000Z" }));
      await store.insertTemplate(template("tpl_old", "old", { state: "ready", createdAt: "2026-01-02T00:00:00.000Z" }));
      await store.insertTemplate(template("tpl_building", "building"));
      await store.insertTemplate(template("tpl_failed", "failed", { state: "failed" }));
      await store.insertTemplate(template("tpl_other", "other", { tenantId: "t2", state: "ready" }));
      assert.equal(await store.countTemplates("t1"), 4);
      assert.equal(await store.countTemplates("t2"), 1);
      assert.deepEqual(
        (await store.readyTemplates("t1")).map((t) => t.id),
        ["tpl_old", "tpl_new"],
      );
    });

    test("setBuilt makes a template ready on its root filesystem; setState changes only the state; both move updated_at", async () => {
      const store = await makeStore();
      await store.insertTemplate(template("tpl_a", "a"));
      await store.insertTemplate(template("tpl_b", "b"));
      await store.setBuilt("tpl_a", "d1", "/usr/bin/python3", "2026-01-02T00:00:00.000Z");
      assert.deepEqual(
        await store.template("tpl_a"),
        template("tpl_a", "a", { rootfs: "d1", python: "/usr/bin/python3", state: "ready", updatedAt: "2026-01-02T00:00:00.000Z" }),
      );
      await store.setBuilt("tpl_b", "d2", null, "2026-01-02T00:00:00.000Z");
      assert.equal((await store.template("tpl_b"))?.python, null);
      await store.setState("tpl_b", "failed", "2026-01-03T00:00:00.000Z");
      assert.deepEqual(
        await store.template("tpl_b"),
        template("tpl_b", "b", { rootfs: "d2", state: "failed", updatedAt: "2026-01-03T00:00:00.000Z" }),
      );
      await store.setState("nothing", "failed", T0);
      await store.setBuilt("nothing", "d3", null, T0);
      assert.deepEqual(await store.allRootfs().then((r) => r.sort()), ["d1", "d2"]);
    });

    test("root filesystems: shared ones are counted per template, listed once; templates without one are not listed", async () => {
      const store = await makeStore();
      assert.deepEqual(await store.allRootfs(), []);
      await store.insertTemplate(template("tpl_a", "a", { rootfs: "shared", state: "ready" }));
      await store.insertTemplate(template("tpl_b", "b", { rootfs: "shared", state: "ready", tenantId: "t2" }));
      await store.insertTemplate(template("tpl_c", "c", { rootfs: "own", state: "ready" }));
      await store.insertTemplate(template("tpl_d", "d"));
      assert.equal(await store.rootfsUsers("shared"), 2);
      assert.equal(await store.rootfsUsers("own"), 1);
      assert.equal(await store.rootfsUsers("nothing"), 0);
      assert.deepEqual((await store.allRootfs()).sort(), ["own", "shared"]);
      await store.deleteTemplate("tpl_a");
      assert.equal(await store.rootfsUsers("shared"), 1);
    });

    test("builds: insert, read, update (status, phase, progress, error and times); the newest is the last", async () => {
      const store = await makeStore();
      await store.insertTemplate(template("tpl_a", "a"));
      const first = build("bld_1", "tpl_a");
      await store.insertBuild(first);
      assert.deepEqual(await store.build("bld_1"), first);
      assert.equal(await store.build("nothing"), undefined);
      assert.deepEqual(await store.lastBuild("tpl_a"), first);
      assert.equal(await store.lastBuild("nothing"), undefined);
      const done = {
        ...first,
        status: "failed" as const,
        phase: "building" as const,
        progress: 60,
        error: "step 2 exited with 1",
        startedAt: "2026-01-01T00:00:01.000Z",
        completedAt: "2026-01-01T00:00:09.000Z",
      };
      await store.updateBuild(done);
      assert.deepEqual(await store.build("bld_1"), done);
      const second = build("bld_2", "tpl_a", { createdAt: "2026-01-02T00:00:00.000Z" });
      await store.insertBuild(second);
      assert.deepEqual(await store.lastBuild("tpl_a"), second);
    });

    test("unfinished builds are those neither completed nor failed", async () => {
      const store = await makeStore();
      await store.insertTemplate(template("tpl_a", "a"));
      await store.insertBuild(build("bld_pending", "tpl_a"));
      await store.insertBuild(build("bld_running", "tpl_a", { status: "running" }));
      await store.insertBuild(build("bld_done", "tpl_a", { status: "completed", phase: "completed", progress: 100 }));
      await store.insertBuild(build("bld_failed", "tpl_a", { status: "failed" }));
      assert.deepEqual((await store.unfinishedBuilds()).map((b) => b.id).sort(), ["bld_pending", "bld_running"]);
    });

    test("delete removes the template and its builds and frees its name; an unknown id is harmless", async () => {
      const store = await makeStore();
      await store.insertTemplate(template("tpl_a", "a"));
      await store.insertBuild(build("bld_1", "tpl_a"));
      await store.insertTemplate(template("tpl_b", "b"));
      await store.insertBuild(build("bld_2", "tpl_b"));
      await store.deleteTemplate("tpl_a");
      await store.deleteTemplate("nothing");
      assert.equal(await store.template("tpl_a"), undefined);
      assert.equal(await store.build("bld_1"), undefined);
      assert.equal(await store.lastBuild("tpl_a"), undefined);
      assert.deepEqual(await store.build("bld_2"), build("bld_2", "tpl_b"));
      assert.equal(await store.countTemplates("t1"), 1);
      assert.equal(await store.insertTemplate(template("tpl_c", "a")), true);
    });

    test("copies: which nodes hold a template's files; idempotent; removed per node and with the template", async () => {
      const store = await makeStore();
      await store.insertTemplate(template("tpl_a", "a"));
      await store.insertTemplate(template("tpl_b", "b"));
      await store.addCopy("tpl_a", "node-2");
      await store.addCopy("tpl_a", "node-1");
      await store.addCopy("tpl_a", "node-1");
      await store.addCopy("tpl_b", "node-1");
      assert.deepEqual(await store.copies("tpl_a"), ["node-1", "node-2"]);
      assert.deepEqual(await store.copiesOn("node-1"), ["tpl_a", "tpl_b"]);
      await store.removeCopy("tpl_a", "node-2");
      await store.removeCopy("tpl_a", "nowhere");
      assert.deepEqual(await store.copies("tpl_a"), ["node-1"]);
      await store.deleteTemplate("tpl_a");
      assert.deepEqual(await store.copies("tpl_a"), []);
      assert.deepEqual(await store.copiesOn("node-1"), ["tpl_b"]);
      assert.deepEqual(await store.copies("nothing"), []);
    });

    test("ready templates' files; a root filesystem's content digest: the first recorded stays", async () => {
      const store = await makeStore();
      await store.insertTemplate(template("tpl_a", "a", { state: "ready", rootfs: "d1", home: "h1" }));
      await store.insertTemplate(template("tpl_b", "b"));
      await store.insertTemplate(template("tpl_c", "c", { state: "ready", home: "h2" }));
      const files = (await store.readyFiles()).sort((x, y) => x.id.localeCompare(y.id));
      assert.deepEqual(files, [
        { id: "tpl_a", rootfs: "d1", home: "h1" },
        { id: "tpl_c", rootfs: null, home: "h2" },
      ]);
      assert.equal(await store.contentDigest("d1"), undefined);
      await store.setContentDigest("d1", "c1");
      await store.setContentDigest("d1", "c2");
      assert.equal(await store.contentDigest("d1"), "c1");
    });
  });
}
