// Translates a Dockerfile onto the template build pipeline: FROM becomes the base (an allowed image,
// one of the tenant's templates, or an earlier stage: each stage is built in turn and `COPY --from`
// copies out of an earlier one), RUN a `run` step in the build sandbox, COPY/ADD `copy_file`
// steps from the request's context, ENV/WORKDIR the template's defaults (and the environment of the
// RUN steps after them). Whatever cannot be honoured is a 400 naming its line, before anything runs.
import { createRequire } from "node:module";
import path from "node:path";
import type { Instruction } from "dockerfile-ast";
import { ApiError } from "../errors.js";
import { commandLine, shellQuote } from "../sandbox/service.js";
import type { Step } from "./steps.js";

let parserModule: typeof import("dockerfile-ast") | undefined;
/** The Dockerfile parser, loaded on first use: most services never read a Dockerfile, and loading it
 * is a noticeable part of a start (~60 ms of CPU). */
const ast = (): typeof import("dockerfile-ast") => {
  parserModule ??= createRequire(import.meta.url)("dockerfile-ast") as typeof import("dockerfile-ast");
  return parserModule;
};

/** One stage of a Dockerfile: its base and its steps. */
export interface StagePlan {
  /** FROM's image reference or template name/id, as written (variables substituted)... */
  from: string;
  /** ...or the earlier stage it builds on (`FROM builder`), by index. */
  fromStage?: number;
  steps: Step[];
}

/** The Dockerfile's last stage (the template), with the stages before it (built first, then dropped). */
export interface DockerfilePlan extends StagePlan {
  /** Earlier stages, in order: `COPY --from` copies out of them (see the `copy_from` step). */
  stages: StagePlan[];
  /** ENV: the template's default environment. */
  environment: Record<string, string>;
  /** The last WORKDIR: where the template's sandboxes start (null: /home/user). */
  workdir: string | null;
  /** LABELs, kept as the template's tags. */
  labels: Record<string, string>;
}

/** Instructions accepted and ignored: sandboxes start the service's own runtime, not the image's. */
const IGNORED = new Set(["EXPOSE", "CMD", "ENTRYPOINT", "MAINTAINER", "STOPSIGNAL", "HEALTHCHECK"]);
/** The users RUN may name: root (what build steps run as) or the sandboxes' own user. */
const USERS = new Set(["root", "0", "0:0", "root:root", "user", "1000", "1000:1000", "user:user"]);
const ARCHIVE = /\.(tar|tgz|tar\.(gz|bz2|xz|zst))$/i;

const bad = (line: number, why: string) => new ApiError("invalid_request", `Dockerfile line ${line}: ${why}`);

/** $VAR, ${VAR}, ${VAR:-default} and ${VAR:+alt} from the variables so far (unknown ones are empty), as Docker does outside RUN. */
export function substitute(text: string, vars: Record<string, string>): string {
  return text.replace(/\\\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (m, braced, op, word, bare) => {
    if (m === "\\$") return "$";
    const value = vars[braced ?? bare];
    if (op === "-") return value ? value : word;
    if (op === "+") return value ? word : "";
    return value ?? "";
  });
}

/**
 * The context's files a COPY source names: the file itself, or every file under it when it is a
 * directory (`.` is the whole context). Globs are not expanded.
 */
function sources(src: string, context: Map<string, Buffer>, line: number): { rel: string; under: string }[] {
  if (/[*?[]/.test(src)) throw bad(line, `wildcards in COPY sources are not supported ('${src}'): name the files or a directory`);
  const norm = path.posix.normalize(src.replace(/^\/+/, ""));
  if (norm === ".." || norm.startsWith("../")) throw bad(line, `'${src}' is outside the build context`);
  if (context.has(norm)) return [{ rel: norm, under: path.posix.basename(norm) }];
  const prefix = norm === "." ? "" : `${norm.replace(/\/$/, "")}/`;
  const found = [...context.keys()].filter((k) => k.startsWith(prefix)).map((k) => ({ rel: k, under: k.slice(prefix.length) }));
  if (found.length === 0) throw bad(line, `'${src}' is not in the build context (the request's context)`);
  return found;
}

/** Parses the request's context (relative path → base64) into files, held to `maxBytes` in all. */
export function readContext(context: Record<string, string>, maxBytes: number): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  let total = 0;
  for (const [name, b64] of Object.entries(context)) {
    const rel = path.posix.normalize(name);
    if (rel.startsWith("/") || rel === ".." || rel.startsWith("../") || rel === ".") {
      throw new ApiError("invalid_request", `context: '${name}' must be a relative path inside the context`);
    }
    const data = Buffer.from(b64, "base64");
    total += data.length;
    if (total > maxBytes) {
      throw new ApiError(
        "invalid_request",
        `context: the files take more than ${maxBytes} bytes, the limit (AGENTBOX_TEMPLATE_MAX_CONTEXT_MB)`,
      );
    }
    files.set(rel, data);
  }
  return files;
}

function execForm(ins: Instruction): string[] | undefined {
  if (!(ins instanceof ast().JSONInstruction) || !ins.getOpeningBracket()) return undefined;
  // The text itself, as Docker reads it (the parser's own JSON values drop spaces inside strings);
  // what is not a JSON array of strings is the shell form, as in Docker.
  try {
    const value: unknown = JSON.parse(ins.getArgumentsContent() ?? "");
    if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value;
  } catch {}
  return undefined;
}

/** The instruction's flags as written (`--from=x`). */
function flags(ins: Instruction): string[] {
  if (!(ins instanceof ast().ModifiableInstruction)) return [];
  return ins.getFlags().map((f) => (f.getValue() === null ? `--${f.getName()}` : `--${f.getName()}=${f.getValue()}`));
}

function properties(ins: Instruction, vars: Record<string, string>): [string, string][] {
  if (!(ins instanceof ast().PropertyInstruction)) return [];
  return ins.getProperties().map((p) => [p.getName(), substitute(p.getValue() ?? "", vars)]);
}

/** A stage being read: its plan so far, and its name (`AS name`), lower case as Docker reads it. */
interface Stage extends DockerfilePlan {
  name: string | undefined;
}

/** The earlier stage `ref` names (`AS` name or index), or undefined. */
function stageOf(stages: Stage[], ref: string): number | undefined {
  const byName = stages.findIndex((st) => st.name === ref.toLowerCase());
  if (byName >= 0) return byName;
  return /^[0-9]+$/.test(ref) && Number(ref) < stages.length ? Number(ref) : undefined;
}

export function translateDockerfile(text: string, context: Map<string, Buffer>): DockerfilePlan {
  const dockerfile = ast().DockerfileParser.parse(text);
  const stages: Stage[] = [];
  let plan: Stage = { name: undefined, from: "", steps: [], environment: {}, workdir: null, labels: {}, stages: [] };
  /** ARG values (for substitution and RUN) and ENV values (also kept). */
  const args: Record<string, string> = {};
  let workdir = "/";
  for (const ins of dockerfile.getInstructions()) {
    const keyword = ins.getKeyword().toUpperCase();
    const line = ins.getRange().start.line + 1;
    const vars = { ...args, ...plan.environment };
    const argv = ins.getArguments().map((a) => a.getValue());
    if (keyword !== "FROM" && keyword !== "ARG" && !plan.from) throw bad(line, `${keyword} before FROM`);
    switch (keyword) {
      case "FROM": {
        const flag = flags(ins)[0];
        if (flag) throw bad(line, `FROM ${flag} is not supported`);
        const named = argv.length === 3 && argv[1]?.toUpperCase() === "AS";
        if (argv.length !== 1 && !named) throw bad(line, "FROM takes one image, optionally `AS name`");
        // A new stage: the one before it is done (its ENV and WORKDIR are its own).
        if (plan.from) {
          stages.push(plan);
          plan = { name: undefined, from: "", steps: [], environment: {}, workdir: null, labels: {}, stages: [] };
          workdir = "/";
        }
        const from = substitute(argv[0] as string, { ...args });
        const name = named ? (argv[2] as string).toLowerCase() : undefined;
        if (name && (stageOf(stages, name) !== undefined || /^[0-9]+$/.test(name))) throw bad(line, `stage name '${name}' is used already`);
        plan.name = name;
        plan.from = from;
        const earlier = stages.findIndex((st) => st.name !== undefined && st.name === from.toLowerCase());
        if (earlier >= 0) plan.fromStage = earlier;
        break;
      }
      case "RUN": {
        const flag = flags(ins)[0];
        if (flag) throw bad(line, `RUN ${flag} is not supported`);
        const exec = execForm(ins);
        const body = exec ? commandLine("exec", exec) : commandLine("exec /bin/sh -c", [ins.getArgumentsContent() ?? ""]);
        const exports = Object.entries(vars).map(([k, v]) => `export ${k}=${shellQuote(v)}`);
        plan.steps.push({
          type: "run",
          args: [[`cd ${shellQuote(workdir)}`, ...exports, body].join(" && ")],
          label: `Dockerfile line ${line} (RUN)`,
        });
        break;
      }
      case "ENV":
        for (const [k, v] of properties(ins, vars)) plan.environment[k] = v;
        break;
      case "ARG":
        for (const [k, v] of properties(ins, vars)) args[k] = v;
        break;
      case "LABEL":
        for (const [k, v] of properties(ins, vars)) plan.labels[k] = v;
        break;
      case "WORKDIR": {
        const dir = path.posix.resolve(workdir, substitute(ins.getArgumentsContent() ?? "", vars));
        workdir = dir;
        plan.workdir = dir;
        plan.steps.push({ type: "mkdir", args: [dir], label: `Dockerfile line ${line} (WORKDIR)` });
        break;
      }
      case "USER": {
        const user = substitute(argv.join(" "), vars);
        if (!USERS.has(user)) {
          throw bad(line, `USER ${user} is not supported: steps run as root and sandboxes as the service's own user ('user')`);
        }
        break;
      }
      case "COPY":
      case "ADD": {
        const fl = flags(ins);
        const from = fl.find((f) => f.startsWith("--from"));
        const other = fl.find((f) => f !== from && !/^--chown=(root|0)(:(root|0))?$/.test(f));
        if (other) throw bad(line, `${keyword} ${other} is not supported`);
        const paths = (execForm(ins) ?? argv).map((a) => substitute(a, vars));
        if (paths.length < 2) throw bad(line, `${keyword} needs a source and a destination`);
        const last = paths[paths.length - 1] as string;
        const dest = path.posix.resolve(workdir, last);
        const asDir = paths.length > 2 || last.endsWith("/");
        if (from) {
          if (keyword !== "COPY") throw bad(line, "ADD --from is not supported: use COPY --from");
          const ref = from.slice("--from=".length);
          const index = stageOf(stages, ref);
          if (index === undefined) {
            throw bad(line, `COPY ${from}: '${ref}' is not an earlier stage of this Dockerfile (copying from an image is not supported)`);
          }
          for (const src of paths.slice(0, -1)) {
            if (/[*?[]/.test(src)) throw bad(line, `wildcards in COPY sources are not supported ('${src}')`);
            plan.steps.push({
              type: "copy_from",
              args: [String(index), path.posix.resolve("/", src), asDir ? `${dest}/` : dest],
              label: `Dockerfile line ${line} (COPY --from=${ref} ${src})`,
            });
          }
          break;
        }
        const copies: Step[] = [];
        for (const src of paths.slice(0, -1)) {
          if (keyword === "ADD" && /^[a-z]+:\/\//i.test(src))
            throw bad(line, `ADD of a URL is not supported ('${src}'): builds have no network`);
          if (keyword === "ADD" && ARCHIVE.test(src)) throw bad(line, `ADD of an archive is not supported ('${src}'): COPY it and RUN tar`);
          const files = sources(src, context, line);
          const single = files.length === 1 && files[0]?.rel === path.posix.normalize(src.replace(/^\/+/, ""));
          for (const f of files) {
            copies.push({
              type: "copy_file",
              args: [single && !asDir ? dest : path.posix.join(dest, f.under)],
              content: (context.get(f.rel) as Buffer).toString("base64"),
              label: `Dockerfile line ${line} (${keyword} ${f.rel})`,
            });
          }
        }
        // Docker makes the destination's directories; the supervisor's file writes need them.
        const dirs = [...new Set(copies.map((c) => path.posix.dirname((c.args as string[])[0] as string)))];
        plan.steps.push({ type: "mkdir", args: dirs, label: `Dockerfile line ${line} (${keyword})` }, ...copies);
        break;
      }
      default:
        if (IGNORED.has(keyword)) break;
        throw bad(
          line,
          `${keyword} is not supported (supported: FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR, USER root, LABEL; ignored: ${[...IGNORED].join(", ")})`,
        );
    }
  }
  if (!plan.from) throw new ApiError("invalid_request", "The Dockerfile has no FROM");
  const { name: _, ...last } = plan;
  return {
    ...last,
    stages: stages.map((st) => ({ from: st.from, steps: st.steps, ...(st.fromStage !== undefined ? { fromStage: st.fromStage } : {}) })),
  };
}
