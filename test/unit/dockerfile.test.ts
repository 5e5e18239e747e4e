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

test("context limits and refusals", () => {
  assert.throws(() => readContext({ a: Buffer.alloc(20).toString("base64") }, 10), /AGENTBOX_TEMPLATE_MAX_CONTEXT_MB/);
  assert.throws(() => translateDockerfile("FROM a\nVOLUME /x", new Map()), /^.*Dockerfile line 2: VOLUME is not supported/);
  assert.throws(() => translateDockerfile("# nothing", new Map()), /no FROM/);
});
