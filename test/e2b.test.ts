// End to end: E2B's official JavaScript SDKs (`e2b`, `@e2b/code-interpreter`), unchanged, against
// the real service with only E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY set: the control API,
// the code interpreter, files and commands, and the SDKs' own error types.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Sandbox as CodeSandbox } from "@e2b/code-interpreter";
import { AuthenticationError, CommandExitError, NotFoundError, Sandbox, type SandboxOpts, TimeoutError } from "e2b";
import { startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
const sandboxes: string[] = [];

before(async () => {
  server = await startServer();
  process.env.E2B_API_URL = `${server.url}/e2b`;
  process.env.E2B_SANDBOX_URL = `${server.url}/e2b`;
  process.env.E2B_API_KEY = server.key;
});

after(async () => {
  for (const id of sandboxes) await Sandbox.kill(id).catch(() => {});
  await server?.dispose();
});

async function codeSandbox(opts?: SandboxOpts): Promise<CodeSandbox> {
  const sbx = await CodeSandbox.create(opts);
  sandboxes.push(sbx.sandboxId);
  return sbx;
}

describe("control API", () => {
  test("create, getInfo with metadata, list by metadata, setTimeout, connect, kill", async () => {
    const tag = `t${Date.now()}`;
    const sbx = await Sandbox.create({ metadata: { tag, owner: "e2b-test" }, timeoutMs: 120_000 });
    sandboxes.push(sbx.sandboxId);
    const info = await sbx.getInfo();
    assert.equal(info.sandboxId, sbx.sandboxId);
    assert.deepEqual(info.metadata, { tag, owner: "e2b-test" });
    assert.equal(info.state, "running");
    assert.ok(info.endAt.getTime() > info.startedAt.getTime());

    const other = await Sandbox.create({ metadata: { tag: `${tag}-other` } });
    sandboxes.push(other.sandboxId);
    const found = await Sandbox.list({ query: { metadata: { tag } } }).nextItems();
    assert.deepEqual(
      found.map((s) => s.sandboxId),
      [sbx.sandboxId],
    );

    await sbx.setTimeout(600_000);
    const extended = await sbx.getInfo();
    assert.ok(extended.endAt.getTime() - Date.now() > 500_000, "the new timeout is in force");

    const again = await Sandbox.connect(sbx.sandboxId);
    assert.equal(again.sandboxId, sbx.sandboxId);
    assert.equal(await again.isRunning(), true);

    assert.equal(await Sandbox.kill(other.sandboxId), true);
    await sbx.kill();
    assert.equal(await sbx.isRunning(), false);
    assert.equal(await Sandbox.kill(sbx.sandboxId), false, "a killed sandbox is gone");
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId), NotFoundError);
    await assert.rejects(Sandbox.connect("nosuchsandbox"), NotFoundError);
  });

  test("a wrong API key is the SDK's AuthenticationError", async () => {
    await assert.rejects(Sandbox.create({ apiKey: "wrong_key_123" }), AuthenticationError);
    await assert.rejects(Sandbox.list({ apiKey: "wrong_key_123" }).nextItems(), AuthenticationError);
  });
});
