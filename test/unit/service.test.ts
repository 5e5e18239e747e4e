// The sandbox service's pure helpers: paths as the supervisor resolves them, command lines,
// run timeouts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../../src/errors.js";
import { commandLine, effectiveTimeout, sandboxPath, shellQuote } from "../../src/sandbox/service.js";

test("sandboxPath: relative to /home/user, normalised, never above /", () => {
  assert.equal(sandboxPath("data"), "/home/user/data");
  assert.equal(sandboxPath("./a/./b/"), "/home/user/a/b");
  assert.equal(sandboxPath("/tmp//x"), "/tmp/x");
  assert.equal(sandboxPath("../../../../etc"), "/etc");
  assert.equal(sandboxPath("/.."), "/");
  assert.equal(sandboxPath("a/../../user2"), "/home/user2");
});

test("commandLine quotes each argument as one shell word", () => {
  assert.equal(commandLine("ls"), "ls");
  assert.equal(commandLine("echo", ["a b", "it's", "$HOME", ""]), `echo 'a b' 'it'\\''s' '$HOME' ''`);
  assert.equal(shellQuote("plain-word_1.txt"), "plain-word_1.txt");
  assert.equal(shellQuote("; rm -rf /"), "'; rm -rf /'");
});

test("effectiveTimeout: the default when absent, the client's value up to the maximum, a 400 above it", () => {
  const config = { defaultRunTimeoutS: 30, maxRunTimeoutS: 600 };
  assert.equal(effectiveTimeout(undefined, config), 30);
  assert.equal(effectiveTimeout(600, config), 600);
  assert.throws(
    () => effectiveTimeout(601, config),
    (err: unknown) => err instanceof ApiError && err.status === 400 && /at most 600 seconds/.test(err.message),
  );
});
