// The curl sessions of the README and docs/*.md as runnable examples: finds the fenced shell blocks
// that call the service, splits each into the commands and the output the docs show after them
// (`# {...}` comments), and compares a documented output with the real one loosely (`...` is a
// wildcard; ids, times, pids and durations are whatever the service answered).

export interface Expectation {
  /** 1-based line in the markdown file of the first output line. */
  line: number;
  /** The documented output, without the leading `# `. */
  text: string;
}

export interface DocBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** `needs-internet` and the like, from an `<!-- example: ... -->` comment just before the fence. */
  marker: string | null;
  /** The block's lines, as in the file. */
  lines: string[];
  /** Index into `lines` where each expectation starts, with what it expects. */
  expectations: { at: number; expect: Expectation }[];
}

const FENCE = /^```(sh|bash)\s*$/;
const MARKER = /^<!--\s*example:\s*([\w-]+)/;

/** The shell blocks of a markdown file that call the service with curl. */
export function shellBlocks(file: string, markdown: string): DocBlock[] {
  const all = markdown.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < all.length; i++) {
    if (!FENCE.test(all[i] ?? "")) continue;
    const start = i;
    const lines: string[] = [];
    for (i++; i < all.length && !(all[i] ?? "").startsWith("```"); i++) lines.push(all[i] ?? "");
    if (!lines.some((l) => /^(?!\s*#).*\bcurl\b/.test(l))) continue;
    let prev = start - 1;
    while (prev >= 0 && (all[prev] ?? "").trim() === "") prev--;
    const marker = MARKER.exec(all[prev] ?? "")?.[1] ?? null;
    blocks.push({ file, line: start + 1, marker, lines, expectations: outputs(lines, start + 2) });
  }
  return blocks;
}

/** A `# ...` comment group right after a command (no blank line between) is the output it shows,
 *  unless the command only assigns a variable (then the comment tells what the answer looked like). */
function outputs(lines: string[], firstLine: number): { at: number; expect: Expectation }[] {
  const found: { at: number; expect: Expectation }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i] ?? "";
    const before = lines[i - 1] ?? "";
    if (!l.startsWith("#") || i === 0 || before.trim() === "" || before.startsWith("#")) continue;
    const group: string[] = [];
    let j = i;
    for (; j < lines.length && (lines[j] ?? "").startsWith("#"); j++) group.push((lines[j] ?? "").replace(/^# ?/, ""));
    if (!/^\s*[A-Z_]+=\$\(/.test(commandBefore(lines, i))) {
      found.push({ at: i, expect: { line: firstLine + i, text: group.join("\n") } });
    }
    i = j - 1;
  }
  return found;
}

/** The first line of the command that ends just before line `i` (following `\` continuations back). */
function commandBefore(lines: string[], i: number): string {
  let k = i - 1;
  while (k > 0 && (lines[k - 1] ?? "").trimEnd().endsWith("\\")) k--;
  // A command whose quoted argument spans lines: walk back to the line that starts it.
  while (k > 0 && !/^\s*(curl|[A-Z_]+=|[a-z])/.test(lines[k] ?? "")) k--;
  return lines[k] ?? "";
}

// ---- loose JSON: JSON where `...` may stand for members, elements, values or parts of strings ----

export const ELLIPSIS: unique symbol = Symbol("...");
export type Loose = typeof ELLIPSIS | string | number | boolean | null | Loose[] | { members: Map<string, Loose>; open: boolean };

/** Parses the documented JSON values in `text` (several values one after another are a list). */
export function parseLoose(text: string): Loose[] {
  let pos = 0;
  const ws = () => {
    while (pos < text.length && /[\s,]/.test(text[pos] ?? "")) pos++;
  };
  const value = (): Loose => {
    ws();
    if (text.startsWith("...", pos)) {
      pos += 3;
      return ELLIPSIS;
    }
    const c = text[pos];
    if (c === "{") {
      pos++;
      const members = new Map<string, Loose>();
      let open = false;
      for (;;) {
        ws();
        if (pos >= text.length) return { members, open: true };
        if (text[pos] === "}") {
          pos++;
          return { members, open };
        }
        if (text.startsWith("...", pos)) {
          pos += 3;
          open = true;
          continue;
        }
        const key = str();
        ws();
        if (text[pos] !== ":") throw new Error(`expected ':' at ${pos} in ${text}`);
        pos++;
        members.set(key, value());
      }
    }
    if (c === "[") {
      pos++;
      const items: Loose[] = [];
      for (;;) {
        ws();
        if (pos >= text.length) return [...items, ELLIPSIS];
        if (text[pos] === "]") {
          pos++;
          return items;
        }
        items.push(value());
      }
    }
    if (c === '"') return str();
    const m = /^(-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null)/.exec(text.slice(pos));
    if (!m) throw new Error(`unexpected '${text.slice(pos, pos + 20)}' in documented output`);
    pos += m[0].length;
    return JSON.parse(m[0]) as Loose;
  };
  const str = (): string => {
    const m = /^"(?:[^"\\]|\\.)*"/.exec(text.slice(pos));
    if (!m) throw new Error(`expected a string at '${text.slice(pos, pos + 20)}'`);
    pos += m[0].length;
    return JSON.parse(m[0]) as string;
  };
  const values: Loose[] = [];
  for (;;) {
    ws();
    if (pos >= text.length) return values;
    values.push(value());
  }
}

/** Every JSON value in a response body, in order (curl prints them with no separator). */
export function jsonValues(output: string): unknown[] {
  const values: unknown[] = [];
  let pos = 0;
  while (pos < output.length) {
    const c = output[pos] ?? "";
    if (c !== "{" && c !== "[" && c !== '"' && !/[-\d tfn]/.test(c)) {
      pos++;
      continue;
    }
    const end = valueEnd(output, pos);
    if (end === -1) {
      pos++;
      continue;
    }
    try {
      values.push(JSON.parse(output.slice(pos, end)));
      pos = end;
    } catch {
      pos++;
    }
  }
  return values;
}

/** Where the JSON value starting at `pos` ends: bracket matching for containers, a line end otherwise. */
function valueEnd(s: string, pos: number): number {
  const c = s[pos];
  if (c !== "{" && c !== "[") {
    const nl = s.indexOf("\n", pos);
    return nl === -1 ? s.length : nl;
  }
  let depth = 0;
  let inString = false;
  for (let i = pos; i < s.length; i++) {
    const ch = s[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** Fields whose value is whatever this run produced: ids, times, durations, pids, sizes on disk,
 *  scores, activity counts, limits derived from the machine. */
const VARYING =
  /^(id|\w+_id|pid|created|\w+_at|timestamp|time|\w+_ms|key|prefix|sha256|size_bytes|address|bytes_in|bytes_out|score|url|embedding|usage|png|hw_model|hw_memory|memory_total|cpu_usage|memory_usage|disk_read|disk_write|network_rx|network_tx|runs_per_second|error_rate|live_sandboxes|series|runs_by_language|files|first_id|last_id|context_id|replica_id|restarts|in_flight|size|effective|runs)$/;

/** Differences between a documented value and the real one (empty: they agree), with their paths. */
export function compare(expected: Loose, actual: unknown, path = "$", key = "", numbers = new Map<string, string>()): string[] {
  if (expected === ELLIPSIS) return [];
  if (actual === undefined) return [`${path}: missing`];
  // Counts of runs and failed runs depend on what ran before (an `errors` list is compared).
  if (VARYING.test(key) || (key === "errors" && typeof expected === "number")) return [];
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${path}: expected a list, got ${JSON.stringify(actual)}`];
    const wanted = expected.filter((e) => e !== ELLIPSIS);
    if (wanted.length === expected.length) {
      if (actual.length !== expected.length) return [`${path}: ${expected.length} items documented, ${actual.length} answered`];
      return expected.flatMap((e, i) => compare(e, actual[i], `${path}[${i}]`));
    }
    // With `...` the documented items appear in this order, others may be between them.
    let from = 0;
    for (const e of wanted) {
      const at = actual.findIndex((a, i) => i >= from && compare(e, a, path).length === 0);
      if (at === -1) return [`${path}: no item like ${show(e)} in ${JSON.stringify(actual).slice(0, 300)}`];
      from = at + 1;
    }
    return [];
  }
  if (typeof expected === "object" && expected !== null) {
    if (typeof actual !== "object" || actual === null || Array.isArray(actual)) {
      return [`${path}: expected an object, got ${JSON.stringify(actual)}`];
    }
    const real = actual as Record<string, unknown>;
    const diffs: string[] = [];
    if (!expected.open) {
      const extra = Object.keys(real).filter((k) => !expected.members.has(k));
      if (extra.length > 0) diffs.push(`${path}: undocumented keys ${extra.join(", ")}`);
    }
    // A message repeats the object's pid ("Sent SIGTERM to process 9"): it is this run's pid.
    const own = new Map(numbers);
    const pid = expected.members.get("pid");
    if (typeof pid === "number" && typeof real.pid === "number") own.set(String(pid), String(real.pid));
    for (const [k, v] of expected.members) diffs.push(...compare(v, real[k], `${path}.${k}`, k, own));
    return diffs;
  }
  if (typeof expected === "string" && typeof actual === "string") {
    let doc = expected;
    for (const [from, to] of numbers) doc = doc.replace(new RegExp(`\\b${from}\\b`, "g"), to);
    return stringPattern(doc).test(actual) ? [] : [`${path}: documented ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
  }
  return expected === actual ? [] : [`${path}: documented ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

/** A documented string as a pattern: `...` (with the id beginning it ends, as in `6f1c...`),
 *  `<id>` and a time of day in a log line (`[23/Nov/2026 19:12:16]`) match anything. */
export function stringPattern(s: string): RegExp {
  const parts = s.split(/([\w-]*\.\.\.|<id>|\d\d\/\w{3}\/\d{4} \d\d:\d\d:\d\d)/);
  const re = parts.map((p, i) => (i % 2 === 1 ? "[\\s\\S]*" : p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("");
  return new RegExp(`^${re}$`);
}

function show(e: Loose): string {
  if (e === ELLIPSIS) return "...";
  if (typeof e === "object" && e !== null && !Array.isArray(e)) {
    return `{${[...e.members].map(([k, v]) => `${k}: ${show(v)}`).join(", ")}}`;
  }
  return Array.isArray(e) ? `[${e.map(show).join(", ")}]` : JSON.stringify(e);
}

/** Differences between documented server-sent events and the stream received: the documented
 *  events come in this order (an output event's text may arrive split over several writes, so
 *  stdout/stderr texts are compared joined, and an `end` or `result` event's data loosely). */
export function compareEvents(expected: string, actual: string): string[] {
  const parse = (text: string) => {
    const events: { event: string; data: string }[] = [];
    let event = "message";
    for (const raw of text.split("\n")) {
      const line = raw.replace(/\s{2,}\(.*\)$/, "");
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) {
        events.push({ event, data: line.slice(5).trim() });
        event = "message";
      }
    }
    return events;
  };
  const want = parse(expected);
  const got = parse(actual);
  const diffs: string[] = [];
  for (const stream of ["stdout", "stderr"]) {
    const join = (evs: { event: string; data: string }[]) =>
      evs
        .filter((e) => e.event === stream)
        .map((e) => (JSON.parse(e.data) as { text: string }).text)
        .join("");
    const w = join(want);
    if (w !== "" && !stringPattern(`${w}...`).test(join(got)))
      diffs.push(`${stream}: documented ${JSON.stringify(w)}, got ${JSON.stringify(join(got))}`);
  }
  let from = 0;
  for (const e of want.filter((x) => x.event !== "stdout" && x.event !== "stderr")) {
    const [doc] = parseLoose(e.data);
    const at = got.findIndex((g, i) => {
      if (i < from || g.event !== e.event) return false;
      if (doc === undefined) return true;
      const values = jsonValues(g.data);
      return values.length === 1 ? compare(doc, values[0]).length === 0 : doc === ELLIPSIS || g.data === e.data;
    });
    if (at === -1) diffs.push(`no event ${e.event} like ${e.data} after event #${from} in:\n${actual.slice(0, 2000)}`);
    else from = at + 1;
  }
  return diffs;
}

/** Differences for documented plain text (headers, file contents): each documented line, in order. */
export function compareText(expected: string, actual: string): string[] {
  const got = actual.split(/\r?\n/).map((l) => l.trim().toLowerCase());
  let from = 0;
  for (const raw of expected.split("\n")) {
    const line = raw
      .replace(/\s{2,}\(.*\)$/, "")
      .trim()
      .toLowerCase();
    if (line === "" || line === "...") continue;
    const at = got.findIndex((g, i) => i >= from && g === line);
    if (at === -1) return [`no line '${line}' in:\n${actual.slice(0, 1000)}`];
    from = at + 1;
  }
  return [];
}
