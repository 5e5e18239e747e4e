// The settings tables of docs/operations.md are generated from the settings schemas: this fails when
// a setting changed and `npm run docs:settings` was not run, or a setting has no table.
import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";
import { allSettings, OPERATIONS_MD, renderSettingsDocs } from "../../scripts/settings-docs.js";

test("docs/operations.md's settings tables match the schemas (run npm run docs:settings)", () => {
  const text = fs.readFileSync(OPERATIONS_MD, "utf8");
  assert.equal(renderSettingsDocs(text), text, "docs/operations.md is stale: run `npm run docs:settings`");
});

test("every setting is declared once, under one variable name", () => {
  const names = allSettings().map((m) => m.env);
  assert.deepEqual(
    names.filter((n, i) => names.indexOf(n) !== i),
    [],
  );
  assert.ok(names.every((n) => /^AGENTBOX_[A-Z0-9_]+$/.test(n)));
});

test("a stale table is rewritten, and a setting without a table is an error", () => {
  const text = fs.readFileSync(OPERATIONS_MD, "utf8");
  const stale = text.replace(/\| `AGENTBOX_PORT` \| `8080` \|/, "| `AGENTBOX_PORT` | `9090` |");
  assert.notEqual(stale, text);
  assert.equal(renderSettingsDocs(stale), text);
  assert.throws(
    () => renderSettingsDocs(text.replace(/<!-- settings:events -->[\s\S]*?<!-- \/settings:events -->/, "")),
    /AGENTBOX_EVENTS_PER_SANDBOX/,
  );
});
