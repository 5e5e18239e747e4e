// Model references: hf:OWNER/REPO/FILE to the hub's resolve URL (under a configurable base), plain
// URLs as they are, and the default model name taken from the file name.
import assert from "node:assert/strict";
import { test } from "node:test";
import { defaultName, PullError, sourceUrl } from "../../src/models/pull.js";

test("hf: references map to <base>/OWNER/REPO/resolve/main/FILE", () => {
  assert.equal(
    sourceUrl("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf").href,
    "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf",
  );
  assert.equal(
    sourceUrl("hf:o/r/sub/dir/m.gguf", "http://127.0.0.1:9/mirror/").href,
    "http://127.0.0.1:9/mirror/o/r/resolve/main/sub/dir/m.gguf",
  );
  assert.equal(sourceUrl("hf:o/r/a b.gguf").pathname, "/o/r/resolve/main/a%20b.gguf");
});

test("bad references are PullErrors", () => {
  for (const bad of ["hf:o/m.gguf", "hf:o//m.gguf", "hf:o/r/../x.gguf", "ftp://host/m.gguf", "m.gguf", "file:///etc/passwd"]) {
    assert.throws(() => sourceUrl(bad), PullError, bad);
  }
});

test("the default name is the file name without .gguf", () => {
  assert.equal(defaultName(new URL("https://h/x/Llama-3.2-1B-Instruct-Q4_K_M.gguf?download=1")), "Llama-3.2-1B-Instruct-Q4_K_M");
  assert.equal(defaultName(sourceUrl("hf:o/r/a%20b.gguf")), "a%20b");
});
