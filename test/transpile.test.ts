// Unit tests of prepareJs (src/sandbox/transpile.ts): what a JS/TS cell becomes before a kernel runs
// it. The prepared code of these fixed, trusted cells is evaluated in a node:vm context that stands in
// for a kernel's global scope, to check that state carries from one cell to the next.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, test } from "node:test";
import vm from "node:vm";
import { prepareJs } from "../src/sandbox/transpile.js";

/** A stand-in for the node kernel: one global scope, cells run as scripts, async cells awaited. */
function kernel() {
  const out: string[] = [];
  const context = vm.createContext({
    require: createRequire(import.meta.url),
    console: { log: (...args: unknown[]) => out.push(args.map(String).join(" ")) },
    setTimeout,
  });
  return {
    out,
    async run(source: string, typescript = false): Promise<void> {
      const prepared = prepareJs(source, typescript);
      const value = new vm.Script(prepared.code, { filename: "cell.js" }).runInContext(context);
      if (prepared.isAsync) await value;
    },
  };
}

const lines = (s: string) => s.split("\n").length;

describe("prepareJs", () => {
  test("plain javascript without let/const/class/import/await is unchanged", () => {
    const src = "var a = 1\nfunction f() { let inner = 2; return inner }\nconsole.log(a + f())";
    assert.deepEqual(prepareJs(src, false), { code: src, isAsync: false });
  });

  test("top-level let/const/class become var globals, inner ones are untouched", () => {
    const { code, isAsync } = prepareJs("let a = 1\nconst b = 2\nclass C {}\nfunction f() { const x = 1; let y = 2; return x + y }", false);
    assert.equal(isAsync, false);
    assert.match(code, /^var a = 1\nvar {3}b = 2\nvar C = class C \{\};/);
    assert.match(code, /const x = 1; let y = 2/);
  });

  test("a cell with let/const can run twice in one scope", async () => {
    const k = kernel();
    await k.run("let n = 1\nconst m = n + 1\nclass K {}");
    await k.run("let n = 5\nconst m = n + 1\nclass K {}\nconsole.log(m)");
    assert.deepEqual(k.out, ["6"]);
  });

  test("typescript: types, interfaces, generics and enums are stripped; line numbers are kept", () => {
    const src = [
      "interface P {",
      "  x: number",
      "}",
      "type S = string",
      "function id<T>(v: T): T { return v }",
      "const p: P = { x: 1 }",
      "enum E { A, B }",
      "let s: S = id<string>('x')",
    ].join("\n");
    const { code, isAsync } = prepareJs(src, true);
    assert.equal(isAsync, false);
    assert.doesNotMatch(code, /interface|: number|<T>|: S\b/);
    assert.equal(lines(code), lines(src));
    // Line 8 of the source is still line 8.
    assert.match(code.split("\n")[7] ?? "", /^var\s+s = id\('x'\)/);
  });

  test("typescript state persists: functions, typed declarations, enums", async () => {
    const k = kernel();
    await k.run(
      "interface Box<T> { v: T }\nconst b: Box<number> = { v: 2 }\nfunction twice(n: number): number { return n * 2 }\nenum E { A, B }",
      true,
    );
    await k.run("console.log(twice(b.v), E.B)", true);
    assert.deepEqual(k.out, ["4 1"]);
  });

  test("typescript that does not parse becomes a thrown SyntaxError with the parser's position", () => {
    const { code, isAsync } = prepareJs("const ok = 1\nconst broken: = 5", true);
    assert.equal(isAsync, false);
    assert.throws(
      () => new vm.Script(code).runInNewContext({}),
      // The error comes from another realm: check its name, not its prototype.
      (err: unknown) => (err as Error).name === "SyntaxError" && /\(2:\d+\)/.test((err as Error).message),
    );
  });

  test("imports become var bindings under their own names, keeping line numbers", () => {
    const src =
      'import fs, { readFileSync as rfs } from "node:fs"\nimport * as os from "node:os"\nimport {\n  join,\n  basename,\n} from "node:path"\nimport "node:util"\nconsole.log(1)';
    const { code } = prepareJs(src, false);
    assert.equal(lines(code), lines(src));
    assert.match(code, /^var fs = .*require\("node:fs"\).*, rfs = require\("node:fs"\)\["readFileSync"\];\n/);
    assert.match(code, /\nvar os = require\("node:os"\);\n/);
    assert.match(code, /\nvar join = require\("node:path"\)\["join"\], basename = require\("node:path"\)\["basename"\];\n\n\n\n/);
    assert.match(code, /\nrequire\("node:util"\);\nconsole\.log\(1\)$/);
    assert.doesNotMatch(code, /use strict/);
  });

  test("imported names are globals that the next cell sees", async () => {
    const k = kernel();
    await k.run('import fs from "node:fs"\nimport { join } from "node:path"\nimport * as os from "node:os"');
    await k.run('console.log(typeof fs.readFileSync, join("a", "b"), typeof os.cpus)');
    assert.deepEqual(k.out, ["function a/b function"]);
  });

  test("export keywords are dropped so module-style cells still run", async () => {
    const k = kernel();
    await k.run("export const a = 1\nexport function f() { return 2 }\nexport default class D {}\nexport { a as b }");
    await k.run("export default 5");
    await k.run("console.log(a, f(), typeof D)");
    assert.deepEqual(k.out, ["1 2 function"]);
  });

  test("typescript type-only imports disappear, value imports stay", async () => {
    const k = kernel();
    await k.run('import type { Stats } from "node:fs"\nimport { sep, type ParsedPath } from "node:path"\nconst s: string = sep', true);
    await k.run("console.log(s)", true);
    assert.deepEqual(k.out, ["/"]);
  });

  test("top-level await: the cell becomes async and its declarations persist", async () => {
    const prepared = prepareJs("const v = await Promise.resolve(41)\nlet w = v + 1", false);
    assert.equal(prepared.isAsync, true);
    const k = kernel();
    await k.run(
      "const v = await new Promise((r) => setTimeout(() => r(41), 5))\nlet { w, z: [q] } = { w: v + 1, z: [7] }\nclass A {}\nfunction g() { return 'g' }",
    );
    await k.run("console.log(v, w, q, typeof A, g())");
    assert.deepEqual(k.out, ["41 42 7 function g"]);
  });

  test("for await at top level is async; await only inside a function is not", () => {
    assert.equal(prepareJs("for await (const x of [1]) {}", false).isAsync, true);
    assert.equal(prepareJs("async function f() { await 1 }\nconst g = async () => { await 2 }", false).isAsync, false);
    assert.equal(prepareJs("class C { async m() { await 1 } }", false).isAsync, false);
  });

  test("typescript with imports and top-level await", async () => {
    const k = kernel();
    await k.run(
      'import { basename } from "node:path"\nconst names: string[] = await Promise.resolve(["/a/b.txt"])\nconst first: string = basename(names[0] as string)',
      true,
    );
    await k.run("console.log(first, basename('/x/y'))", true);
    assert.deepEqual(k.out, ["b.txt y"]);
  });

  test("javascript that does not parse is passed on unchanged, for the kernel to report", () => {
    assert.deepEqual(prepareJs("let = = 1", false), { code: "let = = 1", isAsync: false });
    const bad = 'import { x } from "y"\nboom(';
    assert.equal(prepareJs(bad, false).code, bad);
  });
});
