// docs/benchmarks.md keeps one current table per benchmark, written by the benchmark itself
// (BENCH_WRITE_DOCS=1): the section replace, and that every section a benchmark writes exists.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { BENCHMARKS_DOC, replaceSection, sectionBody } from "../../bench/lib.js";

const DOC = [
  "# Benchmarks",
  "",
  "<!-- bench:a -->",
  "old a",
  "<!-- /bench:a -->",
  "",
  "<!-- bench:ab -->",
  "old ab",
  "<!-- /bench:ab -->",
  "",
].join("\n");

test("replaceSection replaces only its own section and keeps the markers", () => {
  const out = replaceSection(DOC, "a", "new a\n");
  assert.equal(out, DOC.replace("old a\n", "new a\n"));
  assert.ok(out.includes("old ab"), "a section whose name begins the same is left alone");
  // Run again: the markers are still there, the text is replaced, not appended.
  assert.equal(replaceSection(out, "a", "newer a"), DOC.replace("old a\n", "newer a\n"));
  assert.equal(replaceSection(DOC, "ab", "new ab"), DOC.replace("old ab", "new ab"));
});

test("replaceSection refuses a missing, reversed or doubled section", () => {
  assert.throws(() => replaceSection(DOC, "b", "x"), /no section/);
  assert.throws(() => replaceSection("<!-- /bench:a -->\n<!-- bench:a -->", "a", "x"), /no section/);
  assert.throws(() => replaceSection(`${DOC}<!-- bench:a -->\n<!-- /bench:a -->\n`, "a", "x"), /twice/);
});

test("a section says when the run was and how fast the machine was", () => {
  const body = sectionBody(
    "| t |\n",
    "machine: a fresh sandboxed python (print(1)) takes 40.1 ms p50 here, now",
    new Date("2026-12-07T20:00:00Z"),
  );
  assert.equal(body, "Last run 2026-12-07; machine: a fresh sandboxed python (print(1)) takes 40.1 ms p50 here, now.\n\n| t |");
});

test("every section a benchmark writes is in docs/benchmarks.md", () => {
  const doc = fs.readFileSync(BENCHMARKS_DOC, "utf8");
  const benchDir = path.join(path.dirname(BENCHMARKS_DOC), "..", "bench");
  const names = new Set<string>();
  for (const f of fs.readdirSync(benchDir).filter((f) => f.endsWith(".ts"))) {
    const src = fs.readFileSync(path.join(benchDir, f), "utf8");
    for (const m of src.matchAll(/(?:publishTable|published|part)\(\s*(?:oneKey \? )?"([\w-]+)"(?: : "([\w-]+)")?/g)) {
      for (const n of [m[1], m[2]]) if (n) names.add(n);
    }
  }
  assert.ok(names.size >= 15, `only ${names.size} sections found in bench/: ${[...names].join(", ")}`);
  for (const name of names) assert.doesNotThrow(() => replaceSection(doc, name, "x"), `docs/benchmarks.md has no section ${name}`);
});
