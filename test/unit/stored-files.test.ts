// Pure logic of stored files: Range header parsing and stored file names.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseRange } from "../../src/files/routes.js";
import { cleanFilename } from "../../src/files/service.js";

test("parseRange: one range, suffixes, open ends, clamping, and what is ignored or unsatisfiable", () => {
  const cases: [string | undefined, number, ReturnType<typeof parseRange>][] = [
    [undefined, 100, undefined],
    ["bytes=0-9", 100, { start: 0, end: 9 }],
    ["bytes=90-", 100, { start: 90, end: 99 }],
    ["bytes=-10", 100, { start: 90, end: 99 }],
    ["bytes=-500", 100, { start: 0, end: 99 }],
    ["bytes=50-5000", 100, { start: 50, end: 99 }],
    ["bytes=99-99", 100, { start: 99, end: 99 }],
    ["bytes=100-", 100, "unsatisfiable"],
    ["bytes=10-5", 100, "unsatisfiable"],
    ["bytes=-0", 100, "unsatisfiable"],
    ["bytes=0-", 0, "unsatisfiable"],
    ["bytes=0-1,5-6", 100, undefined],
    ["items=0-1", 100, undefined],
    ["bytes=-", 100, undefined],
    ["bytes=abc", 100, undefined],
  ];
  for (const [header, size, want] of cases) assert.deepEqual(parseRange(header, size), want, `${header} of ${size}`);
});

test("cleanFilename: last path component, no control characters, bounded, never . or ..", () => {
  assert.equal(cleanFilename("report.pdf", "x"), "report.pdf");
  assert.equal(cleanFilename("../../etc/passwd", "x"), "passwd");
  assert.equal(cleanFilename("C:\\Users\\me\\a.txt", "x"), "a.txt");
  assert.equal(cleanFilename("a\u0000b\nc\u007f.txt", "x"), "abc.txt");
  assert.equal(cleanFilename("..", "fallback"), "fallback");
  assert.equal(cleanFilename("", "fallback"), "fallback");
  assert.equal(cleanFilename(undefined, "fallback"), "fallback");
  assert.equal(cleanFilename("n".repeat(1000), "x").length, 255);
  assert.equal(cleanFilename("名前.txt", "x"), "名前.txt");
});
