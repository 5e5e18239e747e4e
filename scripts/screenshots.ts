// Takes a screenshot of every dashboard page into docs/screenshots/ (laptop width, and the
// playground at phone width), against a fresh service with a little activity to show.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Page } from "playwright-core";
import { ensureDashboardBuilt, launchBrowser, signIn } from "../test/helpers/dashboard.js";
import { client, startServer } from "../test/helpers/server.js";
import { startUpstream } from "../test/helpers/upstream.js";

const OUT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../docs/screenshots");

async function shot(page: Page, name: string, fullPage = true): Promise<void> {
  // Every page's data loaded (no loading state left), and a moment for reloads to land.
  await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
  await page.waitForTimeout(700);
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage });
  console.log(`docs/screenshots/${name}.png`);
}

async function main(): Promise<void> {
  ensureDashboardBuilt();
  fs.mkdirSync(OUT, { recursive: true });
  // A scripted model on loopback, so the Models and Usage pages have something to show.
  const upstream = await startUpstream();
  const providers = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "screenshots-")), "providers.json");
  fs.writeFileSync(
    providers,
    JSON.stringify({ providers: [{ name: "local", type: "openai", base_url: upstream.baseUrl, models: ["echo"] }] }),
  );
  const server = await startServer({ env: { AGENTBOX_PROVIDERS_FILE: providers } });
  const browser = await launchBrowser().catch(async (err) => {
    await server.dispose();
    await upstream.close();
    throw err;
  });
  try {
    const call = client(server);
    // Some activity: sandboxes with metadata, a file, runs of each language (one failing).
    const ids: string[] = [];
    for (const owner of ["research-agent", "batch-agent"]) {
      const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { metadata: { owner, task: "demo" } });
      ids.push(res.body.sandbox_id);
    }
    const id = ids[0] as string;
    await call("POST", `/v1/agents/sandboxes/${id}/files/write`, { path: "report/summary.md", content: "# Findings\n" });
    await call("POST", `/v1/agents/sandboxes/${id}/files/write`, { path: "data.csv", content: "a,b\n1,2\n" });
    for (const [language, code] of [
      ["python", "sum(range(10))"],
      ["javascript", "1 + 1"],
      ["bash", "echo hi"],
      ["python", "1 / 0"],
    ]) {
      await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { language, code });
    }

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await signIn(page, server.url, server.key);
    await page.waitForTimeout(31_000); // a few points of the overview's 10 s series
    await page.goto(`${server.url}/#/overview`);
    await shot(page, "overview");
    await page.getByRole("link", { name: "Sandboxes", exact: true }).click();
    await page.getByRole("cell", { name: /owner=batch-agent/ }).waitFor();
    await shot(page, "sandboxes");
    await page.goto(`${server.url}/#/sandboxes/${id}`);
    await page.getByText("report/").waitFor();
    await page.getByRole("heading", { name: "Events" }).waitFor();
    await page.waitForTimeout(6500); // a few metrics samples
    await shot(page, "sandbox");
    await page.getByRole("link", { name: "Playground" }).click();
    const code = page.getByRole("textbox", { name: "Code" });
    await code.fill(
      'import matplotlib.pyplot as plt\nimport pandas as pd\n\nprint("hello from python")\ndf = pd.DataFrame({"x": [1, 2, 3], "y": [1, 4, 9]})\nplt.plot(df.x, df.y)\nplt.show()\ndf',
    );
    await page.getByRole("button", { name: "Run" }).click();
    await page.frameLocator("iframe").locator("table").waitFor();
    await page.waitForTimeout(500);
    // A viewport shot: full-page captures leave the (separate-process) sandboxed iframe blank.
    await page.setViewportSize({ width: 1280, height: 1250 });
    await shot(page, "playground", false);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole("link", { name: "Models" }).click();
    await page.getByRole("combobox", { name: /^Model/ }).selectOption("echo");
    await page.getByLabel("Message").fill("what does a sandbox keep between runs?");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("echo: what does").waitFor();
    await shot(page, "models");
    for (const name of ["Usage", "Vectors", "Files", "Deployments"]) {
      await page.getByRole("link", { name, exact: true }).click();
      await page.getByRole("heading", { name, level: 1 }).waitFor();
      await shot(page, name.toLowerCase());
    }
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    const small = await phone.newPage();
    await signIn(small, server.url, server.key);
    await small.goto(`${server.url}/#/sandboxes`);
    await small.getByRole("cell", { name: /owner=batch-agent/ }).waitFor();
    await shot(small, "sandboxes-phone");

    const admin = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await signIn(admin, server.url, server.adminKey);
    await admin.getByRole("link", { name: "Keys" }).click();
    await admin.getByLabel("Key name").fill("research-agent");
    await admin.getByLabel("Tenant").fill("acme");
    await admin.getByRole("button", { name: "Create key" }).click();
    await admin.getByTestId("new-key").waitFor();
    await shot(admin, "keys");
  } finally {
    await browser.close();
    await server.dispose();
    await upstream.close();
    fs.rmSync(path.dirname(providers), { recursive: true, force: true });
  }
}

await main();
