// The registry of open requests by API key: ending a key's ends exactly its own, once; released ones are gone.
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { test } from "node:test";
import { holdUntilClosed, OpenRequests } from "../../src/api/open-requests.js";
import { ApiError } from "../../src/errors.js";

test("endKey ends every open request of that key and no other, and forgets them", () => {
  const open = new OpenRequests();
  const ended: string[] = [];
  open.hold({ keyId: "k1", tenantId: "t" }, () => ended.push("a"));
  const releaseB = open.hold({ keyId: "k1", tenantId: "t" }, () => ended.push("b"));
  open.hold({ keyId: "k1", tenantId: "t" }, () => {
    throw new Error("one failing end does not stop the others");
  });
  open.hold({ keyId: "k2", tenantId: "t" }, () => ended.push("other key"));
  releaseB();
  releaseB();
  assert.equal(open.size, 3);
  assert.equal(open.endKey("k1"), 2);
  assert.deepEqual(ended, ["a"]);
  assert.equal(open.endKey("k1"), 0, "nothing is ended twice");
  assert.equal(open.size, 1);
  assert.equal(open.endKey("unknown"), 0);
});

const active = () => true;

test("holdUntilClosed releases when the response closes, and holds nothing for one already closed", () => {
  const open = new OpenRequests();
  const res = Object.assign(new EventEmitter(), { closed: false });
  let ended = 0;
  holdUntilClosed(open, { keyId: "k", tenantId: "t" }, res, () => ended++, active);
  assert.equal(open.size, 1);
  res.closed = true;
  res.emit("close");
  assert.equal(open.size, 0);
  holdUntilClosed(open, { keyId: "k", tenantId: "t" }, res, () => ended++, active);
  assert.equal(open.size, 0);
  assert.equal(open.endKey("k"), 0);
  assert.equal(ended, 0);
});

test("holdUntilClosed ends at once a request whose key was revoked before it was registered", () => {
  const open = new OpenRequests();
  const res = Object.assign(new EventEmitter(), { closed: false });
  let ended = 0;
  holdUntilClosed(
    open,
    { keyId: "gone", tenantId: "t" },
    res,
    () => ended++,
    (id) => id !== "gone",
  );
  assert.equal(ended, 1);
  assert.equal(open.size, 0);
});

test("endTenant ends every open request of every key of that tenant, with the reason, and no other tenant's", () => {
  const open = new OpenRequests();
  const ended: string[] = [];
  const why = new ApiError("tenant_suspended", "suspended");
  open.hold({ keyId: "k1", tenantId: "t1" }, (w) => ended.push(`a:${w?.code}`));
  open.hold({ keyId: "k2", tenantId: "t1" }, (w) => ended.push(`b:${w?.code}`));
  open.hold({ keyId: "k3", tenantId: "t2" }, () => ended.push("other tenant"));
  assert.equal(open.endTenant("t1", why), 2);
  assert.deepEqual(ended.sort(), ["a:tenant_suspended", "b:tenant_suspended"]);
  assert.equal(open.size, 1);
  assert.equal(open.endTenant("t1", why), 0, "nothing is ended twice");
  assert.equal(open.endKey("k1"), 0, "the ended ones are forgotten");
});
