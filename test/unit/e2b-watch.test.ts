// The E2B facade's polled watcher: which listings become which filesystem events.
import assert from "node:assert/strict";
import { test } from "node:test";
import { EventQueue, eventBytes } from "../../src/e2b/event-queue.js";
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

test("a polled watcher's queue is bounded in events and in bytes: the oldest go first, counted", () => {
  const q = new EventQueue<{ name: string; type: string }>(3, 1000);
  q.push(["a", "b", "c", "d", "e"].map((name) => ({ name, type: "EVENT_TYPE_CREATE" })));
  assert.equal(q.length, 3);
  assert.deepEqual(q.take(), {
    events: ["c", "d", "e"].map((name) => ({ name, type: "EVENT_TYPE_CREATE" })),
    dropped: 2,
  });
  assert.equal(q.length, 0);
  assert.equal(q.bytes, 0);

  // Long names: the byte bound holds before the count does.
  const long = (i: number) => ({ name: `${String(i).padStart(4, "0")}${"x".repeat(296)}`, type: "EVENT_TYPE_WRITE" });
  const byBytes = new EventQueue<{ name: string; type: string }>(1000, 3 * eventBytes(long(0)));
  for (let i = 0; i < 100; i++) byBytes.push([long(i)]);
  assert.equal(byBytes.length, 3);
  assert.ok(byBytes.bytes <= 3 * eventBytes(long(0)));
  const { events, dropped } = byBytes.take();
  assert.deepEqual(
    events.map((e) => e.name.slice(0, 4)),
    ["0097", "0098", "0099"],
  );
  assert.equal(dropped, 97);

  // One event larger than the whole bound is not kept either; clear frees everything.
  const tiny = new EventQueue<{ name: string }>(10, 10);
  tiny.push([{ name: "far too long a name" }]);
  assert.equal(tiny.length, 0);
  tiny.push([{ name: "" }]);
  tiny.clear();
  assert.deepEqual(tiny.take(), { events: [], dropped: 0 });
});
