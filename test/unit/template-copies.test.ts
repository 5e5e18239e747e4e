// A template's root filesystem as it travels between nodes (src/templates/copies.ts): packed by tar
// and unpacked into a staging directory, the tree's content digest is the same on both sides;
// any change of a file's bytes, mode, name or a link's target changes it; an archive over the
// bound is refused; a saved-files archive is received whole with its SHA-256.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { after, test } from "node:test";
import { CopyError, contentDigest, packTree, receiveFile, unpackTree } from "../../src/templates/copies.js";

const dirs: string[] = [];
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-copies-"));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function tree(): string {
  const root = tmp();
  fs.mkdirSync(path.join(root, "usr/bin"), { recursive: true });
  fs.mkdirSync(path.join(root, "empty"));
  fs.writeFileSync(path.join(root, "usr/bin/tool"), "#!/bin/sh\necho hi\n", { mode: 0o755 });
  fs.writeFileSync(path.join(root, "big.bin"), crypto.randomBytes(300_000));
  fs.writeFileSync(path.join(root, "empty.txt"), "");
  fs.symlinkSync("usr/bin", path.join(root, "bin"));
  fs.linkSync(path.join(root, "big.bin"), path.join(root, "hard.bin"));
  return root;
}

const never = new AbortController().signal;

test("packed and unpacked, a tree has the same content digest", async () => {
  const source = tree();
  const staging = tmp();
  await unpackTree(packTree(source), staging, 10 * 2 ** 20, never);
  assert.equal(await contentDigest(staging), await contentDigest(source));
  assert.equal(fs.readlinkSync(path.join(staging, "bin")), "usr/bin");
  assert.equal(fs.statSync(path.join(staging, "usr/bin/tool")).mode & 0o7777, 0o755);
});

test("the content digest changes with a file's bytes, its mode, a name or a link's target", async () => {
  const root = tree();
  const before = await contentDigest(root);
  const changes: [() => void, () => void][] = [
    [() => fs.appendFileSync(path.join(root, "empty.txt"), "x"), () => fs.truncateSync(path.join(root, "empty.txt"), 0)],
    [() => fs.chmodSync(path.join(root, "usr/bin/tool"), 0o644), () => fs.chmodSync(path.join(root, "usr/bin/tool"), 0o755)],
    [
      () => fs.renameSync(path.join(root, "empty"), path.join(root, "emptz")),
      () => fs.renameSync(path.join(root, "emptz"), path.join(root, "empty")),
    ],
    [
      () => {
        fs.rmSync(path.join(root, "bin"));
        fs.symlinkSync("/usr/bin", path.join(root, "bin"));
      },
      () => {
        fs.rmSync(path.join(root, "bin"));
        fs.symlinkSync("usr/bin", path.join(root, "bin"));
      },
    ],
  ];
  for (const [change, undo] of changes) {
    change();
    assert.notEqual(await contentDigest(root), before);
    undo();
    assert.equal(await contentDigest(root), before);
  }
});

test("an archive over the bound is refused with a clear error", async () => {
  const staging = tmp();
  await assert.rejects(unpackTree(packTree(tree()), staging, 100_000, never), (err: unknown) => {
    assert.ok(err instanceof CopyError);
    assert.match(err.message, /larger than/);
    return true;
  });
});

test("a saved-files archive is received whole, with its SHA-256; never over an existing file", async () => {
  const data = crypto.randomBytes(200_000);
  const file = path.join(tmp(), "home.tar");
  assert.equal(await receiveFile(Readable.from([data]), file, 1 << 20, never), crypto.createHash("sha256").update(data).digest("hex"));
  assert.deepEqual(fs.readFileSync(file), data);
  await assert.rejects(receiveFile(Readable.from([data]), file, 1 << 20, never));
  await assert.rejects(receiveFile(Readable.from([data]), path.join(path.dirname(file), "other"), 1000, never), CopyError);
});
