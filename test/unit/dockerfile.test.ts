// Unit: translating a Dockerfile onto build steps (src/templates/dockerfile.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { readContext, substitute, translateDockerfile } from "../../src/templates/dockerfile.js";

const ctx = (files: Record<string, string>) =>
  readContext(Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Buffer.from(v).toString("base64")])), 1 << 20);

test("variables are substituted as Docker does outside RUN", () => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: Dockerfile variables, not a JS template
  assert.equal(substitute("${A}/$B/${C:-c}/${A:+set}/\\$A", { A: "a", B: "b" }), "a/b/c/set/$A");
});

test("ENV, WORKDIR, COPY and RUN become the template's defaults and steps", () => {
  const plan = translateDockerfile(
    'FROM reg.example/x:1\nENV K="v w"\nWORKDIR /app\nCOPY src dest/\nRUN ["echo", "a b"]\nRUN echo $K',
    ctx({ "src/a.txt": "A", "src/d/b.txt": "B" }),
  );
  assert.equal(plan.from, "reg.example/x:1");
  assert.deepEqual(plan.environment, { K: "v w" });
  assert.equal(plan.workdir, "/app");
  assert.deepEqual(
    plan.steps.map((s) => [s.type, s.args?.[0], s.label]),
    [
      ["mkdir", "/app", "Dockerfile line 3 (WORKDIR)"],
      ["mkdir", "/app/dest", "Dockerfile line 4 (COPY)"],
      ["copy_file", "/app/dest/a.txt", "Dockerfile line 4 (COPY src/a.txt)"],
      ["copy_file", "/app/dest/d/b.txt", "Dockerfile line 4 (COPY src/d/b.txt)"],
      ["run", "cd /app && export K='v w' && exec echo 'a b'", "Dockerfile line 5 (RUN)"],
      ["run", "cd /app && export K='v w' && exec /bin/sh -c 'echo $K'", "Dockerfile line 6 (RUN)"],
    ],
  );
  assert.deepEqual(plan.steps.find((s) => s.label === "Dockerfile line 4 (COPY)")?.args, ["/app/dest", "/app/dest/d"]);
});

test("stages: each FROM starts one with its own ENV and WORKDIR; COPY --from names an earlier one; FROM a stage builds on it", () => {
  const plan = translateDockerfile(
    [
      "FROM reg.example/build:1 AS Builder",
      "ENV MODE=build",
      "WORKDIR /src",
      "RUN make",
      "FROM builder AS test",
      "RUN make test",
      "FROM reg.example/run:1",
      "ENV MODE=run",
      "COPY --from=builder /src/out/ /opt/app/",
      "COPY --from=1 report.txt /opt/",
    ].join("\n"),
    ctx({}),
  );
  assert.deepEqual(
    plan.stages.map((st) => [st.from, st.fromStage, st.steps.map((x) => x.type)]),
    [
      ["reg.example/build:1", undefined, ["mkdir", "run"]],
      ["builder", 0, ["run"]],
    ],
  );
  assert.equal(plan.from, "reg.example/run:1");
  assert.deepEqual(plan.environment, { MODE: "run" });
  assert.equal(plan.workdir, null);
  assert.deepEqual(
    plan.steps.map((x) => [x.type, x.args]),
    [
      ["copy_from", ["0", "/src/out", "/opt/app/"]],
      ["copy_from", ["1", "/report.txt", "/opt/"]],
    ],
  );
});

test("context limits and refusals", () => {
  assert.throws(() => readContext({ a: Buffer.alloc(20).toString("base64") }, 10), /AGENTBOX_TEMPLATE_MAX_CONTEXT_MB/);
  assert.throws(() => translateDockerfile("FROM a\nVOLUME /x", new Map()), /^.*Dockerfile line 2: VOLUME is not supported/);
  assert.throws(() => translateDockerfile("# nothing", new Map()), /no FROM/);
});
