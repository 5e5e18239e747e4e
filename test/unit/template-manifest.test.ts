// A registry's manifest is untrusted (src/templates/pull.ts parseManifest): sizes that are not
// counts must not slip past the image size limit, and malformed JSON or shapes fail the build with
// a clear message instead of a TypeError.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseManifest, ToolError } from "../../src/templates/pull.js";

const digest = `sha256:${"a".repeat(64)}`;

test("layer sizes are summed; an index lists its platforms with valid digests only", () => {
  assert.deepEqual(parseManifest(JSON.stringify({ layers: [{ size: 10 }, { size: 32 }] })), { layerBytes: 42 });
  assert.deepEqual(parseManifest(JSON.stringify({ layers: [] })), { layerBytes: 0 });
  const index = parseManifest(
    JSON.stringify({
      manifests: [
        { digest, platform: { os: "linux", architecture: "amd64" } },
        { digest: "sha256:../../x", platform: { os: "linux", architecture: "amd64" } },
        null,
        { digest },
      ],
    }),
  );
  assert.deepEqual(index, {
    platforms: [
      { digest, os: "linux", architecture: "amd64" },
      { digest, os: undefined, architecture: undefined },
    ],
  });
});

test("sizes that are not counts and malformed manifests are refused", () => {
  for (const text of [
    JSON.stringify({ layers: [{ size: -(2 ** 40) }, { size: 10 }] }),
    JSON.stringify({ layers: [{ size: "12" }] }),
    JSON.stringify({ layers: [{}] }),
    JSON.stringify({ layers: [null] }),
    JSON.stringify({ layers: [{ size: 1.5 }] }),
    JSON.stringify({ layers: [{ size: 2 ** 60 }] }),
    JSON.stringify({ layers: "x" }),
    JSON.stringify({ manifests: {} }),
    JSON.stringify([1]),
    "null",
    "{not json",
    "",
  ])
    assert.throws(() => parseManifest(text), ToolError, text);
});
