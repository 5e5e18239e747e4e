// The CLI's everyday commands, spoken over HTTP through the TypeScript SDK: sandbox create|list|
// get|kill|extend, run, exec, cp, shell and usage. Output: tables for people, `--json` for scripts;
// errors on stderr with a non-zero exit.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { Readable } from "node:stream";
import { parseArgs } from "node:util";
import { AgentBox, AgentBoxError, type RunResult, type Sandbox } from "../../sdk/typescript/src/index.js";
import { json, Progress, table } from "./format.js";

export const AGENT_USAGE = `  agentbox sandbox create [--template T] [--timeout SECONDS] [--env K=V]... [--metadata K=V]... [--json]
  agentbox sandbox list [--state running|paused|...] [--metadata K=V]... [--json]
  agentbox sandbox get|kill ID [--json]
  agentbox sandbox extend ID SECONDS [--json]
  agentbox run [-l python|javascript|typescript|bash] [--sandbox ID] [--timeout SECONDS] FILE|-
      streams the output; exits 1 when the code fails. Without --sandbox a sandbox is made for the run
  agentbox exec [--sandbox ID] [--timeout SECONDS] -- COMMAND [ARGS...]
      streams the output; exits with the command's exit code
  agentbox cp LOCAL_PATH SANDBOX_ID:PATH   |   agentbox cp SANDBOX_ID:PATH LOCAL_PATH
  agentbox shell [--sandbox ID] [-l LANGUAGE]     an interactive session against one kernel
  agentbox usage [--since ISO_DATE] [--json]       tokens used through the gateway by this key
    these talk to the service: --url URL (or AGENTBOX_URL; default http://127.0.0.1:8080) and an
    API key in AGENTBOX_API_KEY (or --api-key KEY)`;

export const AGENT_AREAS = new Set(["sandbox", "run", "exec", "cp", "shell", "usage"]);

type Language = "python" | "javascript" | "typescript" | "bash";
const LANGUAGES: Language[] = ["python", "javascript", "typescript", "bash"];
const BY_EXTENSION: Record<string, Language> = {
  ".py": "python",
  ".js": "javascript",
  ".mjs": "javascript",
  ".ts": "typescript",
  ".sh": "bash",
};

const OPTIONS = {
  url: { type: "string" },
  "api-key": { type: "string" },
  json: { type: "boolean" },
  template: { type: "string" },
  timeout: { type: "string" },
  env: { type: "string", multiple: true },
  metadata: { type: "string", multiple: true },
  state: { type: "string" },
  sandbox: { type: "string" },
  language: { type: "string", short: "l" },
  since: { type: "string" },
} as const;

const out = (text: string) => process.stdout.write(text);

export async function agentCommand(argv: string[], usageError: (msg: string) => Error): Promise<number> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  const [area, ...rest] = positionals;
  const ab = new AgentBox({
    apiKey: values["api-key"] ?? process.env.AGENTBOX_API_KEY ?? missingKey(usageError),
    baseUrl: values.url ?? process.env.AGENTBOX_URL,
  });
  const seconds = (v: string | undefined, flag: string): number | undefined => {
    if (v === undefined) return undefined;
    if (!/^[0-9]+$/.test(v) || Number(v) < 1) throw usageError(`${flag} must be a positive whole number of seconds`);
    return Number(v);
  };
  const pairs = (list: string[] | undefined, flag: string): Record<string, string> => {
    const obj: Record<string, string> = {};
    for (const item of list ?? []) {
      const eq = item.indexOf("=");
      if (eq < 1) throw usageError(`${flag} takes KEY=VALUE, got '${item}'`);
      obj[item.slice(0, eq)] = item.slice(eq + 1);
    }
    return obj;
  };
  const language = (fallback: Language): Language => {
    const l = values.language ?? fallback;
    if (!LANGUAGES.includes(l as Language)) throw usageError(`-l must be one of ${LANGUAGES.join(", ")}`);
    return l as Language;
  };

  switch (area) {
    case "sandbox":
      return sandboxCommand(ab, rest, values, { seconds, pairs, usageError });
    case "run": {
      const file = rest[0];
      if (!file || rest.length > 1) throw usageError("run needs one FILE (or - for standard input)");
      const code = file === "-" ? fs.readFileSync(0, "utf8") : fs.readFileSync(file, "utf8");
      const lang = language(BY_EXTENSION[path.extname(file)] ?? "python");
      const timeout = seconds(values.timeout, "--timeout");
      return withSandbox(ab, values.sandbox, async (sbx) => {
        const result = await streamRun(sbx, code, lang, timeout);
        if (values.json) out(json(result));
        return result.error === null ? 0 : 1;
      });
    }
    case "exec": {
      if (rest.length === 0) throw usageError("exec needs a command after --");
      const [command, ...args] = rest as [string, ...string[]];
      const timeout = seconds(values.timeout, "--timeout");
      return withSandbox(ab, values.sandbox, async (sbx) => {
        const opts = { args, ...(timeout ? { timeout: timeout * 1000 } : {}) };
        for await (const ev of sbx.commands.run(command, { ...opts, stream: true })) {
          if (ev.type === "stdout") process.stdout.write(ev.text);
          else if (ev.type === "stderr") process.stderr.write(ev.text);
          else {
            if (values.json) out(json(ev.result));
            if (ev.result.error && ev.result.exit_code === null) process.stderr.write(`${ev.result.error}\n`);
            return typeof ev.result.exit_code === "number" ? ev.result.exit_code : 1;
          }
        }
        return 1;
      });
    }
    case "cp": {
      if (rest.length !== 2) throw usageError("cp needs a source and a destination, one of them SANDBOX_ID:PATH");
      return copy(ab, rest[0] as string, rest[1] as string, values.json === true, usageError);
    }
    case "shell":
      return withSandbox(ab, values.sandbox, (sbx) => shell(sbx, language("python")));
    case "usage": {
      const since = values.since;
      if (since !== undefined && Number.isNaN(Date.parse(since))) throw usageError("--since takes a date, e.g. 2026-11-01");
      const report = (await ab.inference.usage(since ? { since } : {})) as {
        usage: Array<{ model: string; prompt_tokens: number; completion_tokens: number; requests: number }>;
        total_tokens: number;
      };
      if (values.json) out(json(report));
      else {
        out(
          table(
            ["MODEL", "REQUESTS", "PROMPT TOKENS", "COMPLETION TOKENS"],
            report.usage.map((u) => [u.model, u.requests, u.prompt_tokens, u.completion_tokens]),
          ),
        );
        out(`total tokens: ${report.total_tokens}\n`);
      }
      return 0;
    }
    default:
      throw usageError("");
  }
}

function missingKey(usageError: (msg: string) => Error): never {
  throw usageError("set AGENTBOX_API_KEY (or pass --api-key) to an API key of the service");
}

type Values = ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>>["values"];
interface Helpers {
  seconds(v: string | undefined, flag: string): number | undefined;
  pairs(list: string[] | undefined, flag: string): Record<string, string>;
  usageError(msg: string): Error;
}

async function sandboxCommand(ab: AgentBox, args: string[], values: Values, h: Helpers): Promise<number> {
  const [action, id, extra] = args;
  const show = (info: Sandbox["info"]) =>
    out(
      values.json
        ? json(info)
        : table(
            ["SANDBOX", "STATUS", "TEMPLATE", "STARTED", "TIMEOUT AT"],
            [[info.sandbox_id, info.status, info.template, info.started_at, info.timeout_at]],
          ),
    );
  switch (action) {
    case "create": {
      const sbx = await ab.sandboxes.create({
        ...(values.template ? { template: values.template } : {}),
        ...(values.timeout ? { timeout: h.seconds(values.timeout, "--timeout") } : {}),
        env_vars: h.pairs(values.env, "--env"),
        metadata: h.pairs(values.metadata, "--metadata"),
      });
      show(sbx.info);
      return 0;
    }
    case "list": {
      // State and metadata filters go to the service as `state=` and `metadata.KEY=` query parameters.
      const query: Record<string, string> = {};
      if (values.state) query.state = values.state;
      for (const [k, v] of Object.entries(h.pairs(values.metadata, "--metadata"))) query[`metadata.${k}`] = v;
      const list = await ab.sandboxes.list(query as Parameters<typeof ab.sandboxes.list>[0]);
      if (values.json) out(json(list));
      else
        out(
          table(
            ["SANDBOX", "STATUS", "TEMPLATE", "STARTED", "TIMEOUT AT", "METADATA"],
            list.sandboxes.map((s) => [s.sandbox_id, s.status, s.template, s.started_at, s.timeout_at, JSON.stringify(s.metadata)]),
          ),
        );
      return 0;
    }
    case "get":
    case "kill": {
      if (!id) throw h.usageError(`sandbox ${action} needs a sandbox ID`);
      if (action === "get") show((await ab.sandboxes.get(id)).info);
      else {
        const r = await ab.sandboxes.kill(id);
        out(values.json ? json(r) : `killed ${id}\n`);
      }
      return 0;
    }
    case "extend": {
      const secs = h.seconds(extra, "SECONDS");
      if (!id || secs === undefined) throw h.usageError("sandbox extend needs a sandbox ID and SECONDS");
      const sbx = await ab.sandboxes.get(id);
      const r = await sbx.setTimeout(secs);
      out(values.json ? json(r) : `${id} now ends at ${r.timeout_at}\n`);
      return 0;
    }
    default:
      throw h.usageError("sandbox takes create, list, get, kill or extend");
  }
}

/** Runs `fn` in the given sandbox, or in a new one that is killed afterwards. */
async function withSandbox(ab: AgentBox, id: string | undefined, fn: (sbx: Sandbox) => Promise<number>): Promise<number> {
  if (id) return fn(await ab.sandboxes.get(id));
  const sbx = await ab.sandboxes.create();
  try {
    return await fn(sbx);
  } finally {
    await sbx.kill().catch(() => {});
  }
}

/** Streams a run's output to this process's stdout/stderr; rich results print their text. */
async function streamRun(sbx: Sandbox, code: string, language: Language, timeout?: number): Promise<RunResult> {
  for await (const ev of sbx.runCode(code, { language, ...(timeout ? { timeout } : {}), stream: true })) {
    if (ev.type === "stdout") process.stdout.write(ev.text);
    else if (ev.type === "stderr") process.stderr.write(ev.text);
    else if (ev.type === "result") {
      if (ev.result.text !== undefined) process.stdout.write(`${ev.result.text}\n`);
      else process.stdout.write(`[${Object.keys(ev.result).join(", ")} result]\n`);
    } else {
      if (ev.result.error) process.stderr.write(`${ev.result.error}\n`);
      return ev.result;
    }
  }
  throw new AgentBoxError({ status: 0, code: "connection_error", message: "The run's stream ended early" });
}

/** `SANDBOX_ID:PATH` → its parts; a local path (even one with a colon, if it exists) → undefined. */
export function remotePath(arg: string): { sandbox: string; path: string } | undefined {
  const m = /^([A-Za-z0-9_-]+):(.+)$/.exec(arg);
  if (!m || fs.existsSync(arg)) return undefined;
  return { sandbox: m[1] as string, path: m[2] as string };
}

async function copy(ab: AgentBox, src: string, dst: string, asJson: boolean, usageError: (msg: string) => Error): Promise<number> {
  const from = remotePath(src);
  const to = remotePath(dst);
  if (!!from === !!to) throw usageError("cp copies between this machine and a sandbox: one side is SANDBOX_ID:PATH");
  if (to) {
    const size = fs.statSync(src).size;
    const sbx = await ab.sandboxes.get(to.sandbox);
    const target = to.path.endsWith("/") ? `${to.path}${path.basename(src)}` : to.path;
    const progress = new Progress(`upload ${path.basename(src)}`, size);
    const r = await uploadFile(ab, sbx.id, src, target, size, progress);
    progress.finish();
    out(asJson ? json(r) : `${src} → ${to.sandbox}:${r.path} (${r.size} bytes)\n`);
    return 0;
  }
  const remote = from as { sandbox: string; path: string };
  const sbx = await ab.sandboxes.get(remote.sandbox);
  const res = await sbx.files.downloadStream(remote.path, { timeoutMs: 3_600_000 });
  const total = Number(res.headers.get("content-length")) || undefined;
  const target = fs.existsSync(dst) && fs.statSync(dst).isDirectory() ? path.join(dst, path.basename(remote.path)) : dst;
  const tmp = `${target}.part-${crypto.randomBytes(4).toString("hex")}`;
  const progress = new Progress(`download ${path.basename(remote.path)}`, total);
  let written = 0;
  try {
    const file = fs.createWriteStream(tmp);
    for await (const chunk of Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>)) {
      written += (chunk as Buffer).length;
      progress.add((chunk as Buffer).length);
      if (!file.write(chunk)) await new Promise<void>((r) => file.once("drain", () => r()));
    }
    await new Promise<void>((resolve, reject) => {
      file.once("error", reject);
      file.end(() => resolve());
    });
    fs.renameSync(tmp, target);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  progress.finish();
  out(asJson ? json({ path: target, size: written }) : `${remote.sandbox}:${remote.path} → ${target} (${written} bytes)\n`);
  return 0;
}

/** Streams a local file as a multipart upload (never whole in memory), counting progress. */
async function uploadFile(ab: AgentBox, sandboxId: string, src: string, target: string, size: number, progress: Progress) {
  const boundary = `agentbox-${crypto.randomBytes(12).toString("hex")}`;
  const name = path.basename(target).replace(/["\r\n]/g, "_");
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="path"\r\n\r\n${target}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    for await (const chunk of fs.createReadStream(src, { highWaterMark: 1 << 20 })) {
      progress.add((chunk as Buffer).length);
      yield chunk as Buffer;
    }
    yield tail;
  }
  const body = Readable.toWeb(Readable.from(parts())) as unknown as ReadableStream<Uint8Array>;
  return ab.http.call("post", "/v1/agents/sandboxes/{sandbox_id}/upload", {
    path: { sandbox_id: sandboxId },
    rawBody: body,
    headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(head.length + size + tail.length) },
    timeoutMs: 3_600_000,
  });
}

/** Line by line against one kernel: a line ending in ':' or '\' (or an indented one) continues a
 * block that an empty line ends, as in the python prompt. State persists; `exit` or EOF leaves. */
async function shell(sbx: Sandbox, language: Language): Promise<number> {
  const tty = process.stdin.isTTY === true;
  const rl = readline.createInterface({ input: process.stdin, output: tty ? process.stdout : undefined, terminal: tty });
  if (tty) process.stdout.write(`sandbox ${sbx.id} (${language}); 'exit' or Ctrl-D to leave\n`);
  let block: string[] = [];
  let failures = 0;
  const prompt = () => tty && rl.setPrompt(block.length ? "... " : ">>> ");
  prompt();
  if (tty) rl.prompt();
  for await (const line of rl) {
    if (block.length === 0 && line.trim() === "exit") break;
    const continues = /[:\\]\s*$/.test(line) || (block.length > 0 && line.trim() !== "");
    if (continues) block.push(line);
    else {
      const code = block.length ? [...block, line].join("\n") : line;
      block = [];
      if (code.trim() !== "") {
        try {
          if ((await streamRun(sbx, code, language)).error !== null) failures++;
        } catch (err) {
          failures++;
          process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
        }
      }
    }
    prompt();
    if (tty) rl.prompt();
  }
  rl.close();
  return failures === 0 ? 0 : 1;
}
