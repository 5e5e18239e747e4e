// Unit: the metadata filter compiler (no server). Each operator against hand-checked records,
// values of the wrong type, lists in metadata, and the refusals (unknown operator, too deep).
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../src/errors.js";
import { compileFilter, MAX_FILTER_DEPTH } from "../src/vectors/filter.js";

const records = [{ n: 1, s: "a", b: true, tags: ["x", "y"] }, { n: 5, s: "b", b: false }, { n: 10, s: "c" }, { s: "10" }, {}];

function ids(filter: unknown): number[] {
  const p = compileFilter(filter);
  return records.flatMap((r, i) => (!p || p(r) ? [i] : []));
}

test("each operator selects the records it should", () => {
  assert.deepEqual(ids({ n: 5 }), [1]);
  assert.deepEqual(ids({ n: { $eq: 5 } }), [1]);
  assert.deepEqual(ids({ n: { $ne: 5 } }), [0, 2, 3, 4]);
  assert.deepEqual(ids({ n: { $gt: 1 } }), [1, 2]);
  assert.deepEqual(ids({ n: { $gte: 1 } }), [0, 1, 2]);
  assert.deepEqual(ids({ n: { $lt: 10 } }), [0, 1]);
  assert.deepEqual(ids({ n: { $lte: 10 } }), [0, 1, 2]);
  assert.deepEqual(ids({ s: { $in: ["a", "c"] } }), [0, 2]);
  assert.deepEqual(ids({ s: { $nin: ["a", "c"] } }), [1, 3, 4]);
  assert.deepEqual(ids({ b: { $exists: true } }), [0, 1]);
  assert.deepEqual(ids({ b: { $exists: false } }), [2, 3, 4]);
  assert.deepEqual(ids({ b: false }), [1]);
  assert.deepEqual(ids({ tags: "y" }), [0]);
  assert.deepEqual(ids({ tags: { $in: ["q", "x"] } }), [0]);
  assert.deepEqual(ids({ $and: [{ n: { $gte: 1 } }, { n: { $lt: 10 } }] }), [0, 1]);
  assert.deepEqual(ids({ $or: [{ s: "c" }, { b: true }] }), [0, 2]);
  assert.deepEqual(ids({ n: { $gt: 0, $lt: 6 }, s: "b" }), [1]);
  assert.deepEqual(ids({}), [0, 1, 2, 3, 4]);
});

test("comparisons hold only between values of the same type", () => {
  assert.deepEqual(ids({ s: { $gt: "1" } }), [0, 1, 2, 3]);
  assert.deepEqual(ids({ n: { $gt: "0" } }), []);
});

test("unknown operators, bad arguments and nesting deeper than the limit are refused", () => {
  const refused = (f: unknown) =>
    assert.throws(
      () => compileFilter(f),
      (e: unknown) => e instanceof ApiError && e.status === 400,
    );
  refused({ n: { $regex: "a" } });
  refused({ $nor: [{ n: 1 }] });
  refused({ n: { $in: "a" } });
  refused({ n: { $exists: 1 } });
  refused({ n: { $gt: true } });
  refused({ $and: [] });
  refused({ n: { a: { b: 1 } } });
  refused({ n: null });
  let ok: Record<string, unknown> = { n: 1 };
  for (let i = 1; i < MAX_FILTER_DEPTH; i++) ok = { $and: [ok] };
  assert.ok(compileFilter(ok));
  refused({ $or: [ok] });
});
