// Drives the dashboard in Debian's chromium through playwright-core (no browser download): the
// build check, the browser launch and signing in, shared by the dashboard test and the screenshots script.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Builds the dashboard if `npm run setup` has not (the service reads web/dist when it starts). */
export function ensureDashboardBuilt(): void {
  if (fs.existsSync(path.join(ROOT, "web/dist/index.html"))) return;
  execFileSync("npm", ["run", "build:web", "--silent"], { cwd: ROOT, stdio: "inherit" });
}

export async function launchBrowser(): Promise<Browser> {
  // --no-sandbox: chromium's own sandbox cannot start as root; the pages it loads are our own.
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

export async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Pages" }).waitFor();
}
