// The dashboard in a real browser (Debian's chromium): signing in, a sandbox with hostile metadata,
// its files (upload and download), extending it, the playground (streamed text, a plot, HTML results,
// state kept across runs, a short-lived sandbox), the chat offering chat models only (and how to get
// one when there is none), an operator's key created and revoked, and no user string ever becoming markup.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { ensureDashboardBuilt, launchBrowser, signIn } from "./helpers/dashboard.js";
import { writeTinyLlama } from "./helpers/gguf.js";
import { client, freePort, startServer, type TestServer } from "./helpers/server.js";
import { startUpstream, type Upstream } from "./helpers/upstream.js";

const XSS = "<img src=x onerror=alert(1)>";

/** Presses the playground's Run button (exactly "Run": while a run is going it reads "Running…");
 * if it never becomes clickable, the failure says what the page showed instead. */
async function clickRun(page: Page): Promise<void> {
  try {
    await page.getByRole("button", { name: "Run", exact: true }).click({ timeout: 60_000 });
  } catch (err) {
    const shown = await page
      .locator("main, body")
      .first()
      .textContent()
      .catch(() => "(page unreadable)");
    throw new Error(`the Run button was not clickable; the page showed:\n${(shown ?? "").slice(0, 2000)}`, { cause: err });
  }
}

describe("dashboard", () => {
  let server: TestServer;
  let browser: Browser;
  let tmp: string;
  let upstream: Upstream;
  /** A loopback registry that is not there: a template build from it fails at once, with a log. */
  let closedRegistry: string;

  before(async () => {
    ensureDashboardBuilt();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dashboard-test-"));
    // A scripted OpenAI-compatible model on loopback for the Models page's chat.
    upstream = await startUpstream();
    const providers = path.join(tmp, "providers.json");
    fs.writeFileSync(
      providers,
      JSON.stringify({ providers: [{ name: "local", type: "openai", base_url: upstream.baseUrl, models: ["echo"] }] }),
    );
    // Both started at once; each kept even if the other fails, so that after() can stop it (a browser
    // left running would keep the test process alive).
    closedRegistry = `127.0.0.1:${await freePort()}`;
    const env = {
      AGENTBOX_PROVIDERS_FILE: providers,
      AGENTBOX_TEMPLATE_REGISTRIES: closedRegistry,
      AGENTBOX_TEMPLATE_INSECURE_REGISTRIES: closedRegistry,
    };
    const [srv, brw] = await Promise.allSettled([startServer({ env }), launchBrowser()]);
    if (srv.status === "fulfilled") server = srv.value;
    if (brw.status === "fulfilled") browser = brw.value;
    if (srv.status === "rejected") throw srv.reason;
    if (brw.status === "rejected") throw brw.reason;
  });
  after(async () => {
    await browser?.close();
    await server?.dispose();
    await upstream?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** A page that records every dialog (an XSS that ran would open one) and accepts confirmations. */
  async function openPage(): Promise<{ page: Page; dialogs: string[] }> {
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(`${d.type()}: ${d.message()}`);
      void d.accept();
    });
    // Said on stderr, so that a page that stops answering explains itself.
    page.on("crash", () => process.stderr.write("dashboard test: the page crashed\n"));
    page.on("pageerror", (e) => process.stderr.write(`dashboard test: uncaught error in the page: ${e.message}\n`));
    return { page, dialogs };
  }

  it("serves the page without a key, hashed assets cached for good, and /docs still", async () => {
    const index = await fetch(`${server.url}/`);
    assert.equal(index.status, 200);
    assert.match(index.headers.get("content-type") ?? "", /text\/html/);
    // Scripts by this load's nonce only, not by origin: a sandbox port relayed on this origin cannot serve the page a script.
    const policy = index.headers.get("content-security-policy") ?? "";
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]{16,})'(;|$)/.exec(policy)?.[1];
    assert.ok(nonce, policy);
    const html = await index.text();
    const script = /<script nonce="([^"]+)"[^>]* src="(\/assets\/[^"]+\.js)"/.exec(html);
    assert.equal(script?.[1], nonce, html);
    assert.notEqual(/nonce-([^']+)/.exec((await fetch(`${server.url}/`)).headers.get("content-security-policy") ?? "")?.[1], nonce);
    const asset = await fetch(`${server.url}${script?.[2]}`);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get("cache-control") ?? "", /immutable/);
    assert.equal((await fetch(`${server.url}/assets/nope.js`)).status, 404);
    assert.equal((await fetch(`${server.url}/docs/`)).status, 200);
    // The API itself still wants a key.
    assert.equal((await fetch(`${server.url}/v1/agents/sandboxes`)).status, 401);
  });

  it("/docs renders under its own CSP; the dashboard refuses a same-origin script its index did not name", async () => {
    const docs = await fetch(`${server.url}/docs/`);
    const policy = docs.headers.get("content-security-policy") ?? "";
    assert.match(policy, /default-src 'none'/);
    assert.match(policy, /script-src 'self'/);
    assert.match(policy, /frame-ancestors 'none'/);
    const { page } = await openPage();
    const refused: string[] = [];
    page.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) refused.push(m.text());
    });
    await page.goto(`${server.url}/docs/`);
    // Swagger UI's scripts ran: the title comes from the OpenAPI document they fetched.
    await page.locator(".swagger-ui .info .title", { hasText: "AgentBox" }).waitFor({ timeout: 30_000 });
    assert.deepEqual(refused, []);

    // The dashboard: its own bundle, injected again without the nonce (as a relayed port's script
    // would be), is refused; with 'self' it would load.
    await page.goto(`${server.url}/`);
    await page.getByLabel("API key").waitFor();
    const outcome = await page.evaluate(async () => {
      const src = document.querySelector("script[src]")?.getAttribute("src") ?? "";
      return new Promise<string>((resolve) => {
        document.addEventListener("securitypolicyviolation", (e) => resolve(`refused ${e.violatedDirective}`), { once: true });
        const s = document.createElement("script");
        s.type = "module";
        s.src = `${src}?again`;
        s.onload = () => resolve("loaded");
        document.head.append(s);
      });
    });
    assert.match(outcome, /^refused script-src/);
    await page.context().close();
  });

  it("refuses a wrong key with the API's message", async () => {
    const { page } = await openPage();
    await page.goto(`${server.url}/`);
    await page.getByLabel("API key").fill("abx_not_a_key");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").getByText("Invalid or revoked API key").waitFor();
    await page.context().close();
  });

  it("a tenant: sandbox with hostile metadata, files both ways, command, filters, playground (text, plot, HTML, error), extend and kill", async () => {
    const { page, dialogs } = await openPage();
    await signIn(page, server.url, server.key);

    // A sandbox whose metadata is markup: shown as text, never parsed.
    await page.getByRole("link", { name: "Sandboxes", exact: true }).click();
    await page.getByLabel("Metadata", { exact: true }).fill(`name=${XSS}`);
    await page.getByRole("button", { name: "Create sandbox" }).click();
    await page.getByRole("heading", { name: /^Sandbox / }).waitFor();
    await page.getByText(`name=${XSS}`).waitFor();
    const sandboxId = decodeURIComponent(page.url().split("#/sandboxes/")[1] ?? "");
    assert.ok(sandboxId);

    // Upload a file into /home/user, see it listed, download it back.
    const local = path.join(tmp, "notes.txt");
    fs.writeFileSync(local, "dashboard bytes\n");
    await page.getByLabel("Upload file").setInputFiles(local);
    await page.getByText("notes.txt").waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download notes.txt" }).click()]);
    assert.equal(download.suggestedFilename(), "notes.txt");
    assert.equal(fs.readFileSync((await download.path()) as string, "utf8"), "dashboard bytes\n");

    // The command box runs in the same sandbox.
    await page.getByLabel("Command", { exact: true }).fill("cat notes.txt; exit 3");
    await page.getByRole("button", { name: "Run command" }).click();
    await page.getByText("exit status 3").waitFor();
    await page.locator("pre", { hasText: "dashboard bytes" }).waitFor();

    // The list shows it, metadata as text; the filters narrow it.
    await page.getByRole("link", { name: "Sandboxes", exact: true }).click();
    await page.getByRole("cell", { name: `name=${XSS}` }).waitFor();
    await page.getByLabel("Metadata filter").fill("name=someone-else");
    await page.getByText("No sandboxes match these filters").waitFor();
    await page.getByLabel("Metadata filter").fill(`name=${XSS}`);
    await page.getByRole("cell", { name: `name=${XSS}` }).waitFor();
    await page.getByLabel("State").selectOption("terminated");
    await page.getByText("No sandboxes match these filters").waitFor();
    await page.getByLabel("State").selectOption("");

    // The playground: print and plot, streamed; then state kept, and HTML printed and displayed.
    await page.getByRole("link", { name: "Playground" }).click();
    const code = page.getByRole("textbox", { name: "Code" });
    await code.click();
    await page.keyboard.press("ControlOrMeta+a");
    await page.keyboard.press("Delete");
    await code.fill("import matplotlib.pyplot as plt\nx = 41\nprint('plotting now')\nplt.plot([1, 3, 2])\nplt.show()");
    await clickRun(page);
    const output = page.getByRole("region", { name: "Output" });
    await output.getByText("plotting now").waitFor();
    const plot = output.locator('img[src^="data:image/png;base64,"]');
    await plot.waitFor();
    assert.ok(((await plot.evaluate((img: HTMLImageElement) => img.naturalWidth)) as number) > 100, "the plot is a real image");

    await code.fill(`import pandas as pd\nprint(x + 1)\nprint(${JSON.stringify(XSS)})\npd.DataFrame({"cell": [${JSON.stringify(XSS)}]})`);
    await clickRun(page);
    await output.getByText("42").waitFor();
    await output.getByText(XSS).waitFor();
    const frame = output.locator("iframe");
    await frame.waitFor();
    assert.equal(await frame.getAttribute("sandbox"), "", "HTML results: no scripts, no same origin");
    assert.match((await frame.getAttribute("srcdoc")) ?? "", /<table/);

    // An error is shown as such.
    await code.fill("1 / 0");
    await clickRun(page);
    await output.getByRole("alert").getByText("ZeroDivisionError").waitFor();

    // The playground's sandbox is short-lived: 5 minutes after its last run, not half an hour.
    const call = client(server);
    const played = await call<{ sandboxes: Array<{ timeout_at: string }> }>(
      "GET",
      "/v1/agents/sandboxes?state=running&metadata.source=playground",
    );
    assert.equal(played.body.sandboxes.length, 1, JSON.stringify(played.body));
    const left = Date.parse(played.body.sandboxes[0]?.timeout_at ?? "") - Date.now();
    assert.ok(left > 0 && left <= 300_000 + 5_000, `the playground's sandbox has ${left} ms left`);

    // Extend (adding to the life left, not replacing it), then kill the sandbox from its page.
    await page.goto(`${server.url}/#/sandboxes/${encodeURIComponent(sandboxId)}`);
    const ends = page.locator("dd").nth(4);
    const before = (await ends.textContent()) ?? "";
    const endsAt = async () => Date.parse((await call<{ timeout_at: string }>("GET", `/v1/agents/sandboxes/${sandboxId}`)).body.timeout_at);
    const endedBefore = await endsAt();
    // Event details read as text (the created event's end time), not as JSON.
    const createdEvent = page.locator("ul.events li", { hasText: "created" });
    await createdEvent.getByText(/timeout at: /).waitFor();
    assert.doesNotMatch((await createdEvent.textContent()) ?? "", /[{}"]/);
    await page.getByLabel("Extend by (s)").fill("3600");
    await page.getByRole("button", { name: "Extend" }).click();
    await page.waitForFunction((old) => document.querySelectorAll("dd")[4]?.textContent !== old, before);
    const added = (await endsAt()) - endedBefore;
    assert.ok(added >= 3_595_000 && added <= 3_605_000, `Extend by 3600 s added ${added} ms`);
    await page.getByRole("button", { name: "Kill" }).click();
    await page.locator(".badge", { hasText: "terminated" }).waitFor();

    // The probe: no user string became an element of the page, nothing ran.
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    assert.equal(await page.evaluate(() => document.querySelectorAll('img[src="x"], [onerror]').length), 0);
    assert.deepEqual(dialogs, []);
    await page.context().close();
  });

  it("models, usage and stored files: a chat answer streamed in, its tokens on the usage page, a file up and down", async () => {
    const { page } = await openPage();
    await signIn(page, server.url, server.key);
    await page.getByRole("link", { name: "Models" }).click();
    await page.getByRole("listitem").filter({ hasText: "echo" }).waitFor();
    // The embedding model is listed with what it does, and not offered for chat.
    await page.getByRole("listitem").filter({ hasText: "universal-sentence-encoder-lite" }).getByText("embeddings").waitFor();
    const offered = await page
      .getByRole("combobox", { name: /^Model/ })
      .locator("option")
      .allTextContents();
    assert.deepEqual(offered, ["echo"]);
    await page.getByRole("combobox", { name: /^Model/ }).selectOption("echo");
    await page.getByLabel("Message").fill("hello dashboard");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("echo: hello dashboard").waitFor();
    assert.equal(upstream.requests.at(-1)?.body.stream, true, "the chat asked for a stream");
    await page.getByRole("link", { name: "Usage" }).click();
    await page.getByRole("cell", { name: "echo", exact: true }).waitFor();

    // Stored files: upload one, see it listed, download it back.
    const local = path.join(tmp, "report.csv");
    fs.writeFileSync(local, "a,b\n1,2\n");
    await page.getByRole("link", { name: "Files" }).click();
    await page.getByLabel("Upload a file").setInputFiles(local);
    await page.getByRole("cell", { name: "report.csv" }).waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download" }).first().click()]);
    assert.equal(fs.readFileSync((await download.path()) as string, "utf8"), "a,b\n1,2\n");
    await page.context().close();
  });

  it("a gateway without a chat model: the Models page says so and shows the three ways to get one, at a phone's width too", async () => {
    const bare = await startServer({ env: { AGENTBOX_WARM_POOL: "0" } });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const page = await context.newPage();
      await signIn(page, bare.url, bare.key);
      await page.getByRole("link", { name: "Models", exact: true }).click();
      const setup = page.getByTestId("no-chat-model");
      await setup.waitFor();
      const text = (await setup.textContent()) ?? "";
      for (const way of ["AGENTBOX_PROVIDERS_FILE", "models pull", "AGENTBOX_MODEL"]) assert.ok(text.includes(way), way);
      // The embedding model is listed for what it is, and there is no chat form to send it a message.
      await page
        .getByRole("listitem")
        .filter({ hasText: "universal-sentence-encoder-lite" })
        .getByText(/embeddings/)
        .waitFor();
      assert.equal(await page.getByRole("button", { name: "Send" }).count(), 0);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 1, `the page is ${overflow}px wider than the phone`);
    } finally {
      await context.close();
      await bare.dispose();
    }
  });

  it("every page fits a phone's width (wide tables scroll inside their box)", async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await signIn(page, server.url, server.key);
    // Every page's link is in view (none cut off at the right edge, out of sight in a scrolling bar).
    const clipped = await page.evaluate(() =>
      [...document.querySelectorAll("header nav a")]
        .filter((a) => {
          const r = a.getBoundingClientRect();
          const bar = (a.parentElement as HTMLElement).getBoundingClientRect();
          return r.right > Math.min(window.innerWidth, bar.right) + 1 || r.width === 0;
        })
        .map((a) => a.textContent),
    );
    assert.deepEqual(clipped, [], "navigation links out of view at a phone's width");
    for (const name of ["Overview", "Sandboxes", "Playground", "Usage", "Models", "Vectors", "Files", "Deployments"]) {
      await page.getByRole("link", { name, exact: true }).click();
      await page.getByRole("heading", { name, level: 1 }).waitFor();
      await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 1, `${name} is ${overflow}px wider than the phone`);
    }
    await context.close();
  });

  it("vectors and deployments are made from their pages: an index, a text added and found, a model deployed", async () => {
    const { page } = await openPage();
    await signIn(page, server.url, server.key);
    await page.getByRole("link", { name: "Vectors", exact: true }).click();
    await page.getByLabel("Index name").fill("dash-index");
    await page.getByRole("button", { name: "Create index" }).click();
    await page.getByRole("cell", { name: "dash-index", exact: true }).waitFor();
    await page.getByLabel("Vector id").fill("kb-1");
    await page.getByLabel("Text", { exact: true }).fill("I forgot my login and need to change my password");
    await page.getByRole("button", { name: "Add text" }).click();
    await page.getByText("Added 'kb-1' to dash-index.").waitFor({ timeout: 60_000 });
    await page.getByLabel("Query text").fill("How do I reset my password?");
    await page.getByRole("button", { name: "Search" }).click();
    await page.locator("ol.hits li").filter({ hasText: "kb-1" }).waitFor();

    // A GGUF file put in the models directory is deployable at once; the page offers it.
    fs.mkdirSync(path.join(server.dataDir, "models"), { recursive: true });
    writeTinyLlama(path.join(server.dataDir, "models", "tiny.gguf"));
    await page.getByRole("link", { name: "Deployments", exact: true }).click();
    await page.getByLabel("Deployment name").fill("dash-deploy");
    // A model the service cannot deploy is refused with the API's message; the local file is deployed.
    await page.getByLabel("Model").fill("llama-70b");
    await page.getByRole("button", { name: "Deploy" }).click();
    await page
      .getByRole("alert")
      .getByText(/The model 'llama-70b' is not here/)
      .waitFor();
    await page.getByLabel("Model").fill("tiny");
    await page.getByRole("button", { name: "Deploy" }).click();
    await page.getByRole("cell", { name: "dash-deploy", exact: true }).waitFor();
    const list = await client(server)<{ deployments: { deployment_id: string; deployment_name: string }[] }>("GET", "/v1/deployments/list");
    const made = list.body.deployments.find((d) => d.deployment_name === "dash-deploy");
    assert.ok(made, JSON.stringify(list.body));
    await client(server)("DELETE", `/v1/deployments/delete/${made.deployment_id}`);
    await page.context().close();
  });

  it("templates: a saved one with its status and warm pool, a failed build's progress, error and log, delete", async () => {
    const call = client(server);
    const sbx = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    const saved = await call<{ id: string }>("POST", `/v1/agents/sandboxes/${sbx.body.sandbox_id}/template`, { name: "dash-saved" });
    assert.equal(saved.status, 201, JSON.stringify(saved.body));
    const started = await call("POST", "/v1/agents/templates/build", { name: "dash-broken", docker_image: `${closedRegistry}/nothing:1` });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const { page } = await openPage();
    await signIn(page, server.url, server.key);
    await page.getByRole("link", { name: "Templates", exact: true }).click();
    const row = page.getByRole("row").filter({ hasText: "dash-saved" });
    await row.getByText("ready").waitFor();
    await row.getByText(`saved from ${sbx.body.sandbox_id}`).waitFor();
    // The failed build: its status, its error, its log (polled until the build ends).
    const build = page.getByRole("row").filter({ hasText: "dash-broken" });
    await build.getByText("failed", { exact: true }).waitFor({ timeout: 60_000 });
    await build.getByRole("button", { name: "Log" }).click();
    await page
      .locator("pre.build-log")
      .getByText(/build failed/)
      .waitFor();
    await page.getByRole("button", { name: "Delete template dash-saved" }).click();
    await row.waitFor({ state: "detached" });
    assert.equal((await call("GET", "/v1/agents/templates/dash-saved")).status, 404);
    await call("DELETE", `/v1/agents/sandboxes/${sbx.body.sandbox_id}`);
    await page.context().close();
  });

  it("an operator: creates a key (shown once), sees it used, revokes it", async () => {
    const { page } = await openPage();
    await signIn(page, server.url, server.adminKey);
    await page.getByRole("link", { name: "Keys" }).click();
    await page.getByLabel("Key name").fill("dashboard-made");
    await page.getByLabel("Tenant").fill("dash-tenant");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = (await page.getByTestId("new-key").textContent()) as string;
    assert.match(secret, /^abx_/);
    await page.getByRole("button", { name: "Copy" }).waitFor();

    // The key works on the API, and the list shows it with its last use once it has been used.
    const call = client({ url: server.url, key: secret });
    assert.equal((await call("GET", "/v1/agents/sandboxes")).status, 200);
    // The operator's overview has a row per tenant: this tenant's sandbox is counted in its own row.
    const made = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(made.status, 201, JSON.stringify(made.body));
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByRole("heading", { name: "Per tenant" }).waitFor();
    const tenantRow = page.locator("table.tenants-activity tr").filter({ hasText: "dash-tenant" });
    await tenantRow.waitFor();
    assert.equal(await tenantRow.locator("td").nth(1).textContent(), "1");
    // And a row per node: this service alone, up, with its live sandbox counted; no drain for a lone node.
    await page.getByRole("heading", { name: "Nodes" }).waitFor();
    const nodes = (await client({ url: server.url, key: server.adminKey })<{ nodes: { id: string }[] }>("GET", "/v1/admin/nodes")).body
      .nodes;
    assert.equal(nodes.length, 1);
    const nodeRow = page.getByRole("row").filter({ hasText: nodes[0]?.id as string });
    await nodeRow.getByText("up", { exact: true }).waitFor();
    assert.equal(await page.getByRole("button", { name: /^Drain / }).count(), 0);
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${made.body.sandbox_id}`)).status, 200);
    await page.getByRole("link", { name: "Keys" }).click();
    const row = page.getByRole("row").filter({ hasText: "dashboard-made" });
    await row.waitFor();
    assert.doesNotMatch((await row.textContent()) ?? "", /never/);
    await page.getByRole("heading", { name: /dash-tenant/ }).waitFor();
    // The bootstrap key is never stored, but its tenant is listed, its key counted.
    await page.getByRole("heading", { name: /^default\b.*1 active keys/ }).waitFor();

    await page.getByRole("button", { name: "Revoke dashboard-made" }).click();
    await row.getByText("revoked").waitFor();
    assert.equal((await call("GET", "/v1/agents/sandboxes")).status, 401);
    await page.context().close();
  });
});
