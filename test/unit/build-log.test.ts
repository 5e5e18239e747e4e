// A build's log within its byte budget: the latest lines kept with their numbers, the dropped ones
// counted and said first to a reader, and an ended log saved and read back as it was.
import assert from "node:assert/strict";
import { test } from "node:test";
import { BuildLog, type LogLine } from "../../src/templates/build-log.js";

function read(log: BuildLog): { lines: LogLine[]; ended: boolean } {
  const lines: LogLine[] = [];
  let ended = false;
  log.follow({ line: (l) => lines.push(l), end: () => (ended = true) });
  return { lines, ended };
}

test("a log keeps its latest lines within its bytes and says how many it dropped", () => {
  const log = new BuildLog(16 * 1024);
  for (let i = 0; i < 10_000; i++) log.add(`line ${i} ${"x".repeat(100)}`);
  assert.ok(log.bytes <= 16 * 1024, `${log.bytes} bytes held`);
  const { lines } = read(log);
  assert.equal(lines[0]?.n, -1);
  assert.match(lines[0]?.line ?? "", new RegExp(`^\\[${log.droppedLines} earlier line\\(s\\), ${log.droppedBytes} bytes, not kept`));
  assert.equal(log.droppedLines + lines.length - 1, 10_000);
  assert.equal(lines.at(-1)?.n, 9999);
  assert.match(lines.at(-1)?.line ?? "", /^line 9999 /);
  // One huge line is cut to a line's maximum, and the log never drops its last line.
  log.add("y".repeat(100_000));
  assert.equal(read(log).lines.at(-1)?.line.length, 4000);
});

test("an ended log saved and read back follows as it was, and ends at once", () => {
  const log = new BuildLog(2048);
  for (let i = 0; i < 200; i++) log.add(`line ${i}`);
  log.close();
  log.add("after the end: not kept");
  const before = read(log);
  assert.ok(before.ended);
  const back = BuildLog.fromSaved(JSON.parse(JSON.stringify(log.saved())), 2048);
  const after = read(back);
  assert.ok(after.ended);
  assert.deepEqual(after.lines, before.lines);
});
