// The language table: one row per language, and everything that lists languages reads it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Language as LanguageSchema } from "../../src/sandbox/schemas/code.js";
import { CODE_FUNCTION } from "../../src/inference/codetool.js";
import { isLanguage, LANGUAGE_TABLE, LANGUAGES, languageSpec, prepareCode } from "../../src/sandbox/languages.js";

test("every row is complete and names are unique", () => {
  const names = new Set<string>();
  for (const row of LANGUAGE_TABLE) {
    assert.ok(!names.has(row.name), `duplicate ${row.name}`);
    names.add(row.name);
    assert.ok(["python", "node", "bash"].includes(row.kernel), `${row.name}: kernel ${row.kernel}`);
    assert.match(row.extension, /^\.[a-z]+$/);
    assert.ok(["as_is", "javascript", "typescript"].includes(row.prepare));
    assert.ok(row.displayName.length > 0);
    assert.equal(languageSpec(row.name), row);
  }
  assert.deepEqual([...LANGUAGES], ["python", "javascript", "typescript", "bash"]);
});

test("the request schema and the gateway's code tool offer exactly the table's languages", () => {
  assert.deepEqual((LanguageSchema as unknown as { enum: string[] }).enum, [...LANGUAGES]);
  assert.deepEqual([...CODE_FUNCTION.function.parameters.properties.language.enum], [...LANGUAGES]);
});

test("isLanguage accepts the table's names only", () => {
  for (const name of LANGUAGES) assert.equal(isLanguage(name), true);
  for (const other of ["Python", "js", "ts", "cobol", "", "__proto__", "constructor", 1, null, undefined])
    assert.equal(isLanguage(other), false);
});

test("python and bash code is handed over as is", () => {
  const code = "x = 1\nawait = 2  # not JavaScript\n";
  assert.deepEqual(prepareCode("python", code), { code, isAsync: false });
  assert.deepEqual(prepareCode("bash", "echo $((1+1))"), { code: "echo $((1+1))", isAsync: false });
});

test("TypeScript is stripped of types; a top-level await makes the cell async", () => {
  const ts = prepareCode("typescript", "const n: number = 41;\nn + 1;");
  assert.doesNotMatch(ts.code, /: number/);
  assert.equal(ts.isAsync, false);
  const js = prepareCode("javascript", "const r = await Promise.resolve(1);\nr;");
  assert.equal(js.isAsync, true);
  // The same code as JavaScript keeps its annotation (and fails in the kernel, as it should).
  assert.match(prepareCode("javascript", "let s = 'a: number';").code, /a: number/);
});
