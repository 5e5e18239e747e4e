// End to end: templates built from a Dockerfile (POST /v1/agents/templates/build with dockerfile and
// context). The base is an image made on this machine (the host's Python and a shell) pushed to a
// local registry started here; RUN, COPY, ENV and WORKDIR are translated onto the build steps and
// run in the build sandbox. A sandbox of the result sees the copied files, the ENV values and starts
// in the WORKDIR; a failing RUN names its line; what is not supported is a 400 naming its line.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertError, createSandbox, pythonStdout } from "./helpers/api.js";
import { haveImageTools, startTemplateRegistry, type TemplateRegistry } from "./helpers/oci-image.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let call: ReturnType<typeof client>;
let images: TemplateRegistry;
let image: string;

interface Status {
  build_id: string;
  template_id: string;
  status: string;
  error: string | null;
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

before(async () => {
  if (!haveImageTools) return;
  images = await startTemplateRegistry();
  image = images.python;
  server = await startServer({ env: images.env });
  call = client(server);
});

after(async () => {
  await server?.dispose();
  await images?.stop();
});

async function build(body: Record<string, unknown>): Promise<Status> {
  const res = await call<Status>("POST", "/v1/agents/templates/build", body);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  for (let i = 0; i < 600; i++) {
    const s = await call<Status>("GET", `/v1/agents/templates/builds/${res.body.build_id}/status`);
    if (s.body.status === "completed" || s.body.status === "failed") return s.body;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("the build did not end in 120 s");
}

describe("a template from a Dockerfile", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  test("RUN, COPY, ENV and WORKDIR: its sandboxes see the files, the environment and start in the WORKDIR", async () => {
    const dockerfile = [
      "# a comment",
      "ARG GREETING=hello",
      `FROM ${image}`,
      "ENV APP_MODE=production \\",
      "    APP_HOME=/srv/app",
      "WORKDIR $APP_HOME",
      "COPY config.txt ./",
      "COPY lib/ /opt/lib/",
      'RUN echo "$APP_MODE in $(pwd)" > built.txt && test -f config.txt',
      "RUN [\"/usr/bin/python3\", \"-c\", \"open('/srv/app/exec.txt', 'w').write('exec form')\"]",
      "LABEL team=data",
      "EXPOSE 8080",
      'CMD ["python3", "app.py"]',
    ].join("\n");
    const s = await build({
      name: "from-dockerfile",
      dockerfile,
      context: { "config.txt": b64("key=value\n"), "lib/a.py": b64("A = 1\n"), "lib/sub/b.py": b64("B = 2\n"), "unused.txt": b64("x") },
    });
    assert.equal(s.status, "completed", JSON.stringify(s));
    const got = await call<{ environment: Record<string, string>; workdir: string; tags: Record<string, string> }>(
      "GET",
      `/v1/agents/templates/${s.template_id}`,
    );
    assert.equal(got.body.workdir, "/srv/app");
    assert.deepEqual(got.body.environment, { APP_MODE: "production", APP_HOME: "/srv/app" });
    assert.equal(got.body.tags.team, "data");
    const id = await createSandbox(call, { template: s.template_id });
    const out = await pythonStdout(
      call,
      id,
      [
        "import os",
        "print(os.getcwd())",
        "print(os.environ['APP_MODE'])",
        "print(open('config.txt').read().strip())",
        "print(open('/opt/lib/a.py').read().strip(), open('/opt/lib/sub/b.py').read().strip())",
        "print(open('built.txt').read().strip())",
        "print(open('exec.txt').read())",
        "print(os.path.exists('/srv/app/unused.txt'))",
      ].join("\n"),
    );
    assert.deepEqual(out.trim().split("\n"), [
      "/srv/app",
      "production",
      "key=value",
      "A = 1 B = 2",
      "production in /srv/app",
      "exec form",
      "False",
    ]);
    const cmd = await call<{ stdout: string }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "pwd; echo $APP_HOME" });
    assert.deepEqual(cmd.body.stdout.trim().split("\n"), ["/srv/app", "/srv/app"]);
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("a failing RUN fails the build naming its Dockerfile line", async () => {
    const s = await build({
      name: "df-fails",
      dockerfile: `FROM ${image}\nRUN true\n\nRUN echo about to fail >&2; exit 3\nRUN echo never\n`,
    });
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /^Dockerfile line 4 \(RUN\) failed: exit 3: about to fail/);
  });

  test("a multi-stage build: COPY --from an earlier stage (by name and index) brings its files, modes and links; the rest of that stage stays out", async () => {
    const s = await build({
      name: "df-multi",
      dockerfile: [
        `FROM ${image} AS builder`,
        "ENV STAGE=builder",
        "WORKDIR /build",
        `RUN ["/usr/bin/python3", "-c", "import os; os.makedirs('/out/lib'); open('/out/lib/tool.py', 'w').write('ANSWER = 42'); open('/out/run.sh', 'w').write('echo ran'); os.chmod('/out/run.sh', 0o755); os.symlink('lib/tool.py', '/out/link.py')"]`,
        `FROM ${image}`,
        "ENV STAGE=final",
        "COPY --from=builder /out/ /opt/tool/",
        "COPY --from=0 /out/lib/tool.py /opt/single.py",
        `RUN ["/usr/bin/python3", "-c", "import sys; sys.path.insert(0, '/opt/tool/lib'); import tool; assert tool.ANSWER == 42"]`,
      ].join("\n"),
    });
    assert.equal(s.status, "completed", JSON.stringify(s));
    const id = await createSandbox(call, { template: "df-multi" });
    const out = await pythonStdout(
      call,
      id,
      [
        "import os",
        "print(open('/opt/single.py').read().strip())",
        "print(os.access('/opt/tool/run.sh', os.X_OK), os.readlink('/opt/tool/link.py'))",
        "print(os.path.exists('/build'), os.path.exists('/out'), os.environ.get('STAGE'))",
      ].join("\n"),
    );
    assert.deepEqual(out.trim().split("\n"), ["ANSWER = 42", "True lib/tool.py", "False False final"]);
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("unsupported instructions, COPY --from what is not a stage and missing context files are 400 naming the line", async () => {
    const refused = async (dockerfile: string, pattern: RegExp, extra: Record<string, unknown> = {}) => {
      const e = assertError(
        await call("POST", "/v1/agents/templates/build", { name: "df-refused", dockerfile, ...extra }),
        400,
        "invalid_request",
      );
      assert.match(e.error.message, pattern);
    };
    await refused(`FROM ${image}\nRUN true\nSHELL ["/bin/bash", "-c"]`, /^Dockerfile line 3: SHELL is not supported/);
    await refused(`FROM ${image}\nONBUILD RUN true`, /^Dockerfile line 2: ONBUILD is not supported/);
    await refused(
      `FROM ${image}\nCOPY --from=other /x /x`,
      /^Dockerfile line 2: COPY --from=other: 'other' is not an earlier stage of this Dockerfile/,
    );
    await refused(
      `FROM ${image} AS a\nFROM ${image}\nCOPY --from=1 /x /x`,
      /^Dockerfile line 3: COPY --from=1: '1' is not an earlier stage/,
    );
    await refused(`FROM ${image} AS a\nFROM ${image} AS A`, /^Dockerfile line 2: stage name 'a' is used already/);
    await refused(`FROM ${image} AS a\nFROM ${image}\nADD --from=a /x /x`, /^Dockerfile line 3: ADD --from is not supported/);
    await refused(`FROM ${image}\nCOPY missing.txt /x`, /^Dockerfile line 2: 'missing.txt' is not in the build context/);
    await refused(`FROM ${image}\nCOPY ../secret /x`, /^Dockerfile line 2: '..\/secret' is outside the build context/);
    await refused(`FROM ${image}\nUSER nobody`, /^Dockerfile line 2: USER nobody is not supported/);
    await refused(`FROM ${image}\nADD https://example.com/x /x`, /^Dockerfile line 2: ADD of a URL is not supported/);
    await refused("FROM docker.io/library/debian:12\nRUN true", /not allowed/);
    await refused("RUN true", /^Dockerfile line 1: RUN before FROM/);
    await refused(`FROM ${image}`, /without docker_image/, { docker_image: image });
    await refused(`FROM ${image}`, /context/, { context: { "../x": b64("x") } });
    assertError(
      await call("POST", "/v1/agents/templates/build", { name: "x", context: { a: b64("x") }, docker_image: image }),
      400,
      "invalid_request",
    );
  });
});
