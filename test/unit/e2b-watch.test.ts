// The E2B facade's polled watcher: which listings become which filesystem events.
import assert from "node:assert/strict";
import { test } from "node:test";
import { diff, isStagingFile } from "../../src/e2b/watch.js";

test("a write's temporary file is not a file a watcher reports", () => {
  assert.equal(isStagingFile(".upload-0123456789abcdef.part"), true);
  assert.equal(isStagingFile("new.txt"), false);
  assert.equal(isStagingFile(".upload-notes.part"), false, "a user's own file with a similar name is reported");
  assert.equal(isStagingFile("x.upload-0123456789abcdef.part"), false);
});

test("listings become create, write and remove events", () => {
  const before = new Map([
    ["a.txt", "1:t1"],
    ["gone.txt", "1:t1"],
  ]);
  const after = new Map([
    ["a.txt", "2:t2"],
    ["new.txt", "1:t2"],
  ]);
  assert.deepEqual(diff(before, after), [
    { name: "a.txt", type: "EVENT_TYPE_WRITE" },
    { name: "new.txt", type: "EVENT_TYPE_CREATE" },
    { name: "gone.txt", type: "EVENT_TYPE_REMOVE" },
  ]);
});
