// Image references of template builds: parsed like docker's (docker.io and library/ implied), bad
// ones refused, and only registries on the operator's allow-list let through.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../../src/errors.js";
import { checkAllowed, dockerTransport, parseImageRef } from "../../src/templates/reference.js";

test("short names are docker.io's library images at :latest", () => {
  assert.deepEqual(parseImageRef("debian"), { registry: "docker.io", repository: "library/debian", reference: ":latest" });
  assert.equal(dockerTransport(parseImageRef("python:3.12-slim")), "docker://docker.io/library/python:3.12-slim");
});

test("a registry with a port, nested repositories, digests", () => {
  const digest = `sha256:${"a".repeat(64)}`;
  assert.deepEqual(parseImageRef("127.0.0.1:5000/team/env:1"), { registry: "127.0.0.1:5000", repository: "team/env", reference: ":1" });
  assert.deepEqual(parseImageRef(`ghcr.io/o/r@${digest}`), { registry: "ghcr.io", repository: "o/r", reference: `@${digest}` });
  assert.equal(parseImageRef("localhost/x").registry, "localhost");
});

test("malformed references are refused as invalid requests", () => {
  for (const bad of ["", "UPPER/Case", "a b", "x@sha256:zz", "reg.io/../etc", "x:", `${"a".repeat(600)}`]) {
    assert.throws(
      () => parseImageRef(bad),
      (e: unknown) => e instanceof ApiError && e.code === "invalid_request",
      bad,
    );
  }
});

test("only allowed registries", () => {
  assert.doesNotThrow(() => checkAllowed(parseImageRef("debian"), ["docker.io"]));
  assert.throws(() => checkAllowed(parseImageRef("127.0.0.1:5000/x"), ["docker.io"]), /not allowed/);
});
