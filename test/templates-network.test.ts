// End to end: a template build's network. Its steps reach only what the request's `network.allow_out`
// lists, through the same egress proxy as sandboxes ("the internet" is a server on loopback that
// the resolver override maps test names to, as in test/network.test.ts): a Dockerfile RUN and a
// pip_install from an allowed mirror succeed and their results are in the template; a RUN that
// reaches a host not on the list fails the build, whose error and log say what was refused; the
// never-reachable ranges hold for builds too; a bad entry is a 400 before anything runs.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertError, createSandbox, pythonStdout } from "./helpers/api.js";
import { type Internet, startInternet } from "./helpers/internet.js";
import { haveImageTools, startTemplateRegistry, type TemplateRegistry } from "./helpers/oci-image.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let call: ReturnType<typeof client>;
let images: TemplateRegistry;
let internet: Internet;

interface Status {
  build_id: string;
  template_id: string;
  status: string;
  error: string | null;
}

before(async () => {
  if (!haveImageTools) return;
  internet = await startInternet();
  images = await startTemplateRegistry();
  const at = `127.0.0.1:${internet.port}`;
  // Two builds at once: the two refused builds below run side by side.
  server = await startServer({
    env: { ...images.env, AGENTBOX_EGRESS_HOSTS: `mirror.test=${at},other.test=${at}`, AGENTBOX_TEMPLATE_PARALLEL_BUILDS: "2" },
  });
  call = client(server);
});

after(async () => {
  await server?.dispose();
  await images?.stop();
  await internet?.close();
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

/** The build's log lines (its SSE stream, which ends with the build). */
async function logLines(buildId: string): Promise<string[]> {
  const res = await fetch(`${server.url}/v1/agents/templates/builds/${buildId}/logs`, {
    headers: { authorization: `Bearer ${server.key}` },
  });
  assert.equal(res.status, 200);
  return [...(await res.text()).matchAll(/^event: log\ndata: (.*)$/gm)].map((m) => JSON.parse(m[1] as string).line ?? m[1]);
}

/** A RUN that fetches `url` through the proxy settings the build sandbox has, into /opt/fetched.txt. */
const fetchRun = (url: string) =>
  `RUN python3 -c "import urllib.request; open('/opt/fetched.txt', 'w').write(urllib.request.urlopen('${url}', timeout=20).read().decode())"`;

describe("a template build's network", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  test("RUN and pip_install reach an allowed host through the egress proxy; the template keeps what they fetched", async () => {
    const hitsBefore = internet.hits.length;
    const s = await build({
      name: "net-allowed",
      dockerfile: `FROM ${images.python}\n${fetchRun("http://mirror.test/from-the-build")}\n`,
      network: { allow_out: ["mirror.test"] },
    });
    assert.equal(s.status, "completed", JSON.stringify(s));
    assert.ok(internet.hits.slice(hitsBefore).includes("/from-the-build"));
    const lines = await logLines(s.build_id);
    assert.ok(
      lines.some((l) => /network: mirror\.test:80 allowed/.test(l)),
      lines.join("\n"),
    );
    const steps = await build({
      name: "net-pip",
      template_id: s.template_id,
      network: { allow_out: ["mirror.test"] },
      build_steps: [
        { type: "pip_install", args: ["--index-url", "http://mirror.test/simple/", "--trusted-host", "mirror.test", "tinypkg"] },
      ],
    });
    assert.equal(steps.status, "completed", JSON.stringify(steps));
    const id = await createSandbox(call, { template: steps.template_id });
    const out = await pythonStdout(call, id, "import tinypkg\nprint(open('/opt/fetched.txt').read(), tinypkg.VALUE)");
    assert.equal(out.trim(), `hello from mirror.test /from-the-build 42`);
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
    // A malformed entry, or internet access at large, is a 400 before anything is recorded.
    for (const network of [{ allow_out: ["not a domain"] }, { internet_access: true }]) {
      assertError(
        await call("POST", "/v1/agents/templates/build", { name: "net-bad", docker_image: images.python, network }),
        400,
        "invalid_request",
      );
    }
  });

  test("a RUN reaching a host not on the list fails the build, which says what was refused", async () => {
    // And without network (the default) the RUN has no way out at all: built meanwhile.
    const [s, none] = await Promise.all([
      build({
        name: "net-refused",
        dockerfile: `FROM ${images.python}\nRUN true\n${fetchRun("http://other.test/not-allowed")}\n`,
        network: { allow_out: ["mirror.test"] },
      }),
      build({ name: "net-none", dockerfile: `FROM ${images.python}\n${fetchRun("http://mirror.test/no-network")}\n` }),
    ]);
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /^Dockerfile line 3 \(RUN\) failed: exit 1: /);
    assert.match(s.error ?? "", /the build's network refused other\.test:80 \(not in allow_out\)/);
    assert.ok(!internet.hits.includes("/not-allowed"));
    const lines = await logLines(s.build_id);
    assert.ok(
      lines.some((l) => l === "network: other.test:80 refused: not in allow_out"),
      lines.join("\n"),
    );
    assert.equal(none.status, "failed");
    assert.match(none.error ?? "", /^Dockerfile line 2 \(RUN\) failed: exit 1: /);
    assert.ok(!internet.hits.includes("/no-network"));
  });

  test("the never-reachable ranges hold for builds: an allowed private address is still refused", async () => {
    const s = await build({
      name: "net-private",
      dockerfile: `FROM ${images.python}\n${fetchRun("http://10.1.2.3/inside")}\n`,
      network: { allow_out: ["10.0.0.0/8"] },
    });
    assert.equal(s.status, "failed");
    assert.match(
      s.error ?? "",
      /refused 10\.1\.2\.3:80 \(address 10\.1\.2\.3 is loopback, link-local, private or this host's, and is never reachable\)/,
    );
  });
});
