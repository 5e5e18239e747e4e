// The links between README.md and docs/*.md: every relative link names a file that exists and,
// when it has a `#fragment`, a heading of that file (GitHub's anchors), so moving a section
// cannot leave a reader at a dead link.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const DOCS = ["README.md", ...fs.readdirSync(path.join(ROOT, "docs")).flatMap((f) => (f.endsWith(".md") ? [`docs/${f}`] : []))];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*]/g, "")
    .replace(/[^\p{L}\p{N}_ -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a markdown file's headings (fenced code skipped; repeats get -1, -2, ...). */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = anchor(m[1] ?? "");
    let a = base;
    for (let n = 1; found.has(a); n++) a = `${base}-${n}`;
    found.add(a);
  }
  return found;
}

test("anchors follow GitHub's rule", () => {
  assert.equal(anchor("Coordination and routing (Redis)"), "coordination-and-routing-redis");
  assert.equal(anchor("Network: egress policy, egress log, port URLs"), "network-egress-policy-egress-log-port-urls");
  assert.equal(anchor("`DELETE /templates/{id}`"), "delete-templatesid");
});

test("every relative link in README.md and docs/ leads to a file and a heading that exist", () => {
  const broken: string[] = [];
  for (const doc of DOCS) {
    const text = fs.readFileSync(path.join(ROOT, doc), "utf8");
    const prose = text.replace(/```[\s\S]*?```/g, "");
    for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      const href = m[1] ?? "";
      if (/^[a-z]+:/.test(href)) continue;
      const [file, fragment] = href.split("#") as [string, string | undefined];
      const target = file === "" ? path.join(ROOT, doc) : path.resolve(path.dirname(path.join(ROOT, doc)), file);
      if (!fs.existsSync(target)) {
        broken.push(`${doc}: ${href} (no such file)`);
        continue;
      }
      if (fragment && target.endsWith(".md") && !anchors(fs.readFileSync(target, "utf8")).has(fragment)) {
        broken.push(`${doc}: ${href} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, []);
});
