// The CLI's template commands: build from a Dockerfile (uploading the files it COPYs from a context
// directory and following the build's log until it ends), cancel a build, list and delete. Spoken over HTTP with
// the API key (the SDK has no template calls yet).
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { DockerfileParser, JSONInstruction, ModifiableInstruction } from "dockerfile-ast";
import { json, table } from "./format.js";

export const TEMPLATE_USAGE = `  agentbox template build -f Dockerfile --name NAME [--context DIR] [--json]
      uploads the Dockerfile and the files it COPYs/ADDs from DIR (default: the Dockerfile's directory),
      streams the build's log; exits 1 when the build fails
  agentbox template cancel BUILD_ID [--json]
      cancels a build that waits or runs; prints its status once it has ended
  agentbox template list [--json]
  agentbox template delete ID_OR_NAME`;

const OPTIONS = {
  url: { type: "string" },
  "api-key": { type: "string" },
  json: { type: "boolean" },
  file: { type: "string", short: "f" },
  name: { type: "string" },
  context: { type: "string" },
} as const;

interface BuildStatus {
  build_id: string;
  template_id: string;
  status: string;
  error: string | null;
}

/** The context files a Dockerfile's COPY/ADD sources name (a file, or every file under a directory), relative path → base64. */
export function contextFiles(dockerfile: string, dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const add = (rel: string) => {
    const full = path.join(dir, rel);
    const st = fs.statSync(full);
    if (st.isDirectory()) for (const name of fs.readdirSync(full)) add(path.posix.join(rel, name));
    else if (st.isFile()) files[path.posix.normalize(rel)] = fs.readFileSync(full).toString("base64");
  };
  for (const ins of DockerfileParser.parse(dockerfile).getInstructions()) {
    const keyword = ins.getKeyword().toUpperCase();
    if (keyword !== "COPY" && keyword !== "ADD") continue;
    if (ins instanceof ModifiableInstruction && ins.getFlags().some((f) => f.getName() === "from")) continue;
    let words = ins.getArguments().map((a) => a.getValue());
    if (ins instanceof JSONInstruction && ins.getOpeningBracket()) {
      try {
        words = JSON.parse(ins.getArgumentsContent() ?? "[]") as string[];
      } catch {}
    }
    for (const src of words.slice(0, -1)) {
      if (/^[a-z]+:\/\//i.test(src) || /[*?[$]/.test(src)) continue; // the service names what it refuses
      const rel = path.posix.normalize(src.replace(/^\/+/, ""));
      if (rel.startsWith("..") || !fs.existsSync(path.join(dir, rel))) continue;
      add(rel);
    }
  }
  return files;
}

export async function templateCommand(argv: string[], usageError: (msg: string) => Error): Promise<number> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  const [, sub, ...rest] = positionals;
  const key = values["api-key"] ?? process.env.AGENTBOX_API_KEY;
  if (!key) throw usageError("an API key is needed: set AGENTBOX_API_KEY (or pass --api-key)");
  const base = `${(values.url ?? process.env.AGENTBOX_URL ?? "http://127.0.0.1:8080").replace(/\/$/, "")}/v1/agents`;
  const api = async <T>(method: string, url: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!res.ok) {
      const message = (() => {
        try {
          return (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
        } catch {
          return text;
        }
      })();
      throw new Error(`${res.status}: ${message}`);
    }
    return (text ? JSON.parse(text) : null) as T;
  };
  switch (sub) {
    case "build": {
      if (!values.file || !values.name || rest.length) throw usageError("template build needs -f Dockerfile and --name NAME");
      const dockerfile = fs.readFileSync(values.file, "utf8");
      const context = contextFiles(dockerfile, values.context ?? path.dirname(values.file));
      const started = await api<BuildStatus>("POST", "/templates/build", { name: values.name, dockerfile, context });
      if (!values.json) process.stderr.write(`build ${started.build_id} of template ${started.template_id}\n`);
      await followLog(`${base}/templates/builds/${started.build_id}/logs`, key, (line) => {
        if (!values.json) process.stderr.write(`${line}\n`);
      });
      const s = await api<BuildStatus>("GET", `/templates/builds/${started.build_id}/status`);
      if (values.json) process.stdout.write(json(s));
      else process.stdout.write(s.status === "completed" ? `${s.template_id}\n` : "");
      if (s.status !== "completed") process.stderr.write(`build failed: ${s.error ?? s.status}\n`);
      return s.status === "completed" ? 0 : 1;
    }
    case "list": {
      const r = await api<{ templates: { id: string; name: string; vcpu_count: number; memory_mb: number; visibility: string }[] }>(
        "GET",
        "/templates",
      );
      process.stdout.write(
        values.json
          ? json(r.templates)
          : table(
              ["ID", "NAME", "VCPUS", "MEMORY_MB", "VISIBILITY"],
              r.templates.map((t) => [t.id, t.name, t.vcpu_count, t.memory_mb, t.visibility]),
            ),
      );
      return 0;
    }
    case "cancel": {
      if (rest.length !== 1) throw usageError("template cancel needs one BUILD_ID");
      const s = await api<BuildStatus>("DELETE", `/templates/builds/${encodeURIComponent(rest[0] as string)}`);
      process.stdout.write(values.json ? json(s) : `${s.build_id} ${s.status}\n`);
      return 0;
    }
    case "delete": {
      if (rest.length !== 1) throw usageError("template delete needs one ID");
      await api("DELETE", `/templates/${encodeURIComponent(rest[0] as string)}`);
      return 0;
    }
    default:
      throw usageError("template takes build, cancel, list or delete");
  }
}

/** Reads the build's server-sent events until `end`, giving each `log` line. */
async function followLog(url: string, key: string, line: (text: string) => void): Promise<void> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" } });
  if (!res.ok || !res.body) return;
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk as Uint8Array, { stream: true });
    let cut = buf.indexOf("\n\n");
    while (cut >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const name = /^event: ?(.*)$/m.exec(event)?.[1];
      const data = /^data: ?(.*)$/m.exec(event)?.[1];
      if (name === "end") return;
      if (name === "log" && data) line((JSON.parse(data) as { line: string }).line);
      cut = buf.indexOf("\n\n");
    }
  }
}
