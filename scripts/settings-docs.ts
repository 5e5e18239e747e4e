// The settings tables of docs/operations.md, generated from the settings schemas: each table sits
// between `<!-- settings:ID -->` and `<!-- /settings:ID -->` and lists, in declaration order, the
// settings whose `table` (or area) is ID. `npm run docs:settings` rewrites them; a unit test
// (test/unit/settings-docs.test.ts) fails when the file is stale.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { clusterSettingsSchema } from "../src/cluster/settings.js";
import { serverSettingsSchema } from "../src/config.js";
import { deploymentsSettingsSchema } from "../src/deployments/settings.js";
import { e2bSettingsSchema } from "../src/e2b/settings.js";
import { eventSettingsSchema } from "../src/events/settings.js";
import { filesSettingsSchema } from "../src/files/settings.js";
import { embeddingsSettingsSchema } from "../src/inference/embeddings-config.js";
import { inferenceSettingsSchema } from "../src/inference/settings.js";
import { modelsSettingsSchema } from "../src/models/settings.js";
import { networkSettingsSchema } from "../src/network/settings.js";
import { sandboxSettingsSchema } from "../src/sandbox/settings.js";
import { type SettingMeta, settingsList } from "../src/settings/kernel.js";
import { templateSettingsSchema } from "../src/templates/settings.js";
import { vectorSettingsSchema } from "../src/vectors/settings.js";

/** Every settings schema of the service, in the order their rows appear within a table. */
const SCHEMAS = [
  serverSettingsSchema,
  e2bSettingsSchema,
  sandboxSettingsSchema,
  inferenceSettingsSchema,
  modelsSettingsSchema,
  vectorSettingsSchema,
  embeddingsSettingsSchema,
  filesSettingsSchema,
  networkSettingsSchema,
  eventSettingsSchema,
  deploymentsSettingsSchema,
  templateSettingsSchema,
  clusterSettingsSchema,
];

/** The column headers of each table (the last column says what the setting does, or what a client sees past it). */
const TABLES: Record<string, [string, string, string]> = {
  service: ["Variable", "Default", "Meaning"],
  database: ["Variable", "Default", "Meaning"],
  sandbox: ["Variable", "Default", "Over it"],
  requests: ["Variable", "Default", "Over it"],
  connections: ["Variable", "Default", "Over it"],
  node: ["Variable", "Default (derivation)", "Over it"],
  tenants: ["Variable", "Default", "Meaning"],
  "requests-per-key": ["Variable", "Default", "Over it"],
  embeddings: ["Variable", "Default", "Meaning"],
  files: ["Variable", "Default", "Meaning"],
  network: ["Variable", "Default", "Meaning"],
  snapshots: ["Variable", "Default", "Meaning"],
  events: ["Variable", "Default", "Meaning"],
  deployments: ["Variable", "Default", "Meaning"],
  templates: ["Variable", "Default", "Meaning"],
  cluster: ["Variable", "Default", "Meaning"],
};

export function allSettings(): SettingMeta[] {
  return SCHEMAS.flatMap((s) => settingsList(s));
}

function defaultCell(m: SettingMeta): string {
  if (m.defaultDoc !== undefined) return m.defaultDoc;
  if (typeof m.default === "function") throw new Error(`${m.env}: a derived default needs a defaultDoc`);
  if (m.default === undefined) return "unset";
  return `\`${typeof m.default === "string" ? m.default : JSON.stringify(m.default)}\``;
}

/** One table's markdown (header and rows). */
export function renderTable(id: string, settings: SettingMeta[] = allSettings()): string {
  const header = TABLES[id];
  if (!header) throw new Error(`no settings table '${id}'`);
  const rows = settings.filter((m) => (m.table ?? m.area) === id);
  if (rows.length === 0) throw new Error(`settings table '${id}' has no settings`);
  return [`| ${header.join(" | ")} |`, "| --- | --- | --- |", ...rows.map((m) => `| \`${m.env}\` | ${defaultCell(m)} | ${m.doc} |`)].join(
    "\n",
  );
}

const MARKER = /<!-- settings:([a-z-]+) -->\n[\s\S]*?<!-- \/settings:\1 -->/g;

/** `markdown` with every marked table regenerated; throws when a setting belongs to no table in it. */
export function renderSettingsDocs(markdown: string, settings: SettingMeta[] = allSettings()): string {
  const seen = new Set<string>();
  const out = markdown.replace(MARKER, (_all, id: string) => {
    seen.add(id);
    return `<!-- settings:${id} -->\n${renderTable(id, settings)}\n<!-- /settings:${id} -->`;
  });
  const missing = settings.filter((m) => !seen.has(m.table ?? m.area)).map((m) => m.env);
  if (missing.length > 0) throw new Error(`settings in no table of the document: ${missing.join(", ")}`);
  return out;
}

export const OPERATIONS_MD = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "docs", "operations.md");

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const before = fs.readFileSync(OPERATIONS_MD, "utf8");
  const after = renderSettingsDocs(before);
  if (after !== before) fs.writeFileSync(OPERATIONS_MD, after);
  process.stdout.write(
    `${path.relative(process.cwd(), OPERATIONS_MD)}: ${after === before ? "up to date" : "settings tables rewritten"}\n`,
  );
}
