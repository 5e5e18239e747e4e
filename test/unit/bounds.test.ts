// JSON nesting depth is measured on the raw text, before parsing: strings and escapes do not count.
import assert from "node:assert/strict";
import { test } from "node:test";
import { jsonDepthExceeds } from "../../src/api/bounds.js";

test("depth at the limit passes, one more fails", () => {
  const nested = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
  assert.equal(jsonDepthExceeds(nested(64), 64), false);
  assert.equal(jsonDepthExceeds(nested(65), 64), true);
  assert.equal(jsonDepthExceeds('{"a":{"b":[1,{"c":2}]}}', 4), false);
  assert.equal(jsonDepthExceeds('{"a":{"b":[1,{"c":2}]}}', 3), true);
});

test("brackets inside strings do not count", () => {
  assert.equal(jsonDepthExceeds(`{"code":"${"[{".repeat(1000)}"}`, 2), false);
});

test("escaped quotes do not end a string early", () => {
  // The \" inside the string must not end it, or the brackets after it would count.
  assert.equal(jsonDepthExceeds(`{"s":"a\\"[[[[[[[["}`, 2), false);
  assert.equal(jsonDepthExceeds(`{"s":"a\\\\"}`, 1), false);
  assert.equal(jsonDepthExceeds(`{"s":"a\\\\",[[[]]]}`, 2), true);
});

test("flat and empty input", () => {
  assert.equal(jsonDepthExceeds("", 1), false);
  assert.equal(jsonDepthExceeds('"just a string"', 0), false);
  assert.equal(jsonDepthExceeds("[]", 0), true);
});

test("many brackets side by side are shallow; few brackets are never too deep", () => {
  // More openings than the limit in all (the quick count cannot decide), none nested deeply.
  assert.equal(jsonDepthExceeds(`[${"[1],".repeat(200)}[2]]`, 2), false);
  assert.equal(jsonDepthExceeds(`[${"[1],".repeat(200)}[[3]]]`, 2), true);
  // At most `max` openings: decided by the count alone, whatever else the text holds.
  assert.equal(jsonDepthExceeds(`{"vector":[${Array.from({ length: 128 }, (_, i) => i / 7).join(",")}]}`, 2), false);
  assert.equal(jsonDepthExceeds("[[", 2), false);
});
