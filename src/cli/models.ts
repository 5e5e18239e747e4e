// `agentbox models pull|list|rm`: operator commands on this machine's data dir (AGENTBOX_DATA_DIR),
// service running or not; the service picks pulled models up without a restart. A pull draws a
// progress bar on a terminal and writes plain progress lines otherwise.
import { parseArgs } from "node:util";
import type { PullProgress } from "../models/pull.js";

export const MODELS_USAGE = `  agentbox models pull (https://HOST/PATH/FILE.gguf | hf:OWNER/REPO/FILE.gguf) [--name NAME] [--sha256 HEX] [--json]
  agentbox models list [--json]
  agentbox models rm NAME
    these work on this machine's data dir directly (AGENTBOX_DATA_DIR); hf: references go to
    AGENTBOX_HF_BASE_URL (default https://huggingface.co) with HF_TOKEN as the token, if set`;

const MB = 2 ** 20;

function mb(n: number): string {
  return `${(n / MB).toFixed(1)} MB`;
}

/** Draws progress: a redrawn bar on a terminal, otherwise a line per 10% (or per 5 s without a total). */
function progressPrinter(tty: boolean): (p: PullProgress) => void {
  const started = Date.now();
  let lastLine = 0;
  let lastStep = -1;
  let lastDraw = 0;
  return (p) => {
    const now = Date.now();
    if (p.phase === "verify") {
      if (tty) process.stderr.write("\n");
      process.stderr.write(`verifying ${mb(p.received)} (sha256)\n`);
      return;
    }
    const rate = (p.received - p.resumedFrom) / Math.max(0.001, (now - started) / 1000);
    const pct = p.total ? Math.min(100, (100 * p.received) / p.total) : undefined;
    if (tty) {
      if (now - lastDraw < 100 && p.received !== p.total) return;
      lastDraw = now;
      const width = 30;
      const filled = pct === undefined ? 0 : Math.round((pct / 100) * width);
      const bar = pct === undefined ? "" : `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${pct.toFixed(0).padStart(3)}% `;
      process.stderr.write(`\r${bar}${mb(p.received)}${p.total ? ` / ${mb(p.total)}` : ""}  ${mb(rate)}/s   `);
      return;
    }
    const step = pct === undefined ? -1 : Math.floor(pct / 10);
    const due = pct === undefined ? now - lastLine >= 5000 : step > lastStep;
    if (!due && lastLine !== 0) return;
    lastLine = now;
    lastStep = step;
    process.stderr.write(
      `downloaded ${mb(p.received)}${p.total ? ` of ${mb(p.total)} (${pct?.toFixed(0)}%)` : ""}` +
        `${p.resumedFrom > 0 ? `, resumed at ${mb(p.resumedFrom)}` : ""}\n`,
    );
  };
}

/** Runs a `models` command; returns the exit status. Throws an Error for a failed command. */
export async function modelsCommand(argv: string[], usageError: (msg: string) => Error): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: "string" }, sha256: { type: "string" }, json: { type: "boolean" } },
  });
  const [action, arg] = positionals;
  // Imported here, not at the top: the settings take a good part of a second to load, which every
  // other command of the CLI (it imports this file for MODELS_USAGE) would pay for nothing.
  const [{ loadConfig }, { listModels, removeModel }, { pullModel }, { modelsSettings }] = await Promise.all([
    import("../config.js"),
    import("../models/registry.js"),
    import("../models/pull.js"),
    import("../models/settings.js"),
  ]);
  const dataDir = loadConfig().dataDir;
  const out = (text: string) => process.stdout.write(text);
  switch (action) {
    case "pull": {
      if (!arg) throw usageError("models pull needs a URL or hf:OWNER/REPO/FILE.gguf");
      const model = await pullModel({
        source: arg,
        dataDir,
        name: values.name,
        sha256: values.sha256,
        hfBaseUrl: modelsSettings().hfBaseUrl,
        hfToken: process.env.HF_TOKEN || undefined,
        onProgress: progressPrinter(process.stderr.isTTY === true),
      });
      const { resumedFrom, existed, ...entry } = model;
      if (values.json) out(`${JSON.stringify(entry)}\n`);
      else if (existed) out(`${entry.name} is already pulled (${entry.path})\n`);
      else out(`pulled ${entry.name} (${mb(entry.size)}, sha256 ${entry.sha256})\n  ${entry.path}\n`);
      return 0;
    }
    case "list": {
      const models = listModels(dataDir);
      if (values.json) out(`${JSON.stringify(models)}\n`);
      else for (const m of models) out(`${m.name}  ${mb(m.size)}  sha256 ${m.sha256 ?? "(not recorded)"}  ${m.source ?? ""}\n`);
      return 0;
    }
    case "rm": {
      if (!arg) throw usageError("models rm needs a NAME");
      if (!removeModel(dataDir, arg)) {
        process.stderr.write(`no model named '${arg}'\n`);
        return 1;
      }
      out(`removed ${arg}\n`);
      return 0;
    }
    default:
      throw usageError("");
  }
}
