// Which build of the service and CLI a test runs: the compiled one under dist/ (what `npm start`
// runs; setup builds it) when it is newer than every source file, else the source under tsx. The
// compiled service starts with ~1 s less CPU, and the suite starts it about a hundred times.
import fs from "node:fs";
import path from "node:path";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(file));
    else if (entry.name.endsWith(".ts")) newest = Math.max(newest, fs.statSync(file).mtimeMs);
  }
  return newest;
}

let compiled: boolean | undefined;

/** True when dist/ holds a build of the current sources (checked once per test process). */
function compiledIsCurrent(): boolean {
  if (compiled === undefined) {
    // AGENTBOX_TEST_FROM_SOURCE=1 runs the sources whatever dist/ holds.
    const built = fs.statSync(path.join(ROOT, "dist/src/main.js"), { throwIfNoEntry: false });
    compiled =
      process.env.AGENTBOX_TEST_FROM_SOURCE !== "1" && built !== undefined && built.mtimeMs >= newestSource(path.join(ROOT, "src"));
  }
  return compiled;
}

/** Node's arguments that run `src/<name>.ts` (e.g. "main", "cli/main"), compiled when current. */
export function entryArgs(name: string): string[] {
  return compiledIsCurrent() ? [path.join(ROOT, "dist/src", `${name}.js`)] : ["--import", "tsx", path.join(ROOT, "src", `${name}.ts`)];
}
