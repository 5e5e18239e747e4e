// Renders a Helm chart offline, as `helm template` would, for tests on a machine without helm or
// Kubernetes: values.yaml coalesced with an override (maps merged key by key, null deletes a key),
// the built-in objects (.Values, .Release, .Chart, .Template), every file of templates/ executed
// with the _*.tpl helpers defined, and the output split into YAML documents. The templates run in
// Go's own text/template engine (compiled to WebAssembly), so their syntax and semantics are Go's;
// what it lacks is Helm's function library (Sprig, include, toYaml...), which the chart therefore
// does not use. Go's engine here stops at a missing map key, where Helm would print nothing:
// stricter, so a misspelled value fails the test instead of rendering empty.
import fs from "node:fs";
import path from "node:path";
import { parse as executeGoTemplate } from "@evertdespiegeleer/go-template";
import { parseAllDocuments, parse as parseYaml } from "yaml";

export type Values = Record<string, unknown>;

export interface RenderOptions {
  releaseName?: string;
  namespace?: string;
  /** Values over the chart's values.yaml (what `-f file` and `--set` give helm). */
  values?: Values;
}

export interface RenderedChart {
  objects: RenderedObject[];
  /** templates/NOTES.txt as `helm install` prints it (rendered like the others, not a manifest). */
  notes: string;
}

export interface RenderedObject {
  /** The template that produced it, e.g. templates/api-deployment.yaml. */
  template: string;
  object: Record<string, unknown>;
}

const isMap = (v: unknown): v is Values => typeof v === "object" && v !== null && !Array.isArray(v);

/** Go-yaml (Helm's parser) reads YAML 1.1: `yes`/`on` are booleans there, so they are here. */
const YAML_OPTIONS = { version: "1.1", uniqueKeys: true } as const;

/** A values file (or Chart.yaml) as Helm reads it. */
export function readValues(file: string): Values {
  const parsed: unknown = parseYaml(fs.readFileSync(file, "utf8"), YAML_OPTIONS);
  if (parsed === null || parsed === undefined) return {};
  if (!isMap(parsed)) throw new Error(`${file}: not a map of values`);
  return parsed;
}

/** Helm's coalescing of values: maps merge key by key, anything else is replaced, null deletes. */
export function coalesceValues(base: Values, override: Values): Values {
  const out: Values = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = out[key];
    if (value === null) delete out[key];
    else if (isMap(value) && isMap(current)) out[key] = coalesceValues(current, value);
    else out[key] = value;
  }
  return out;
}

/** Chart.yaml as templates see it: .Chart.Name, .Chart.Version, .Chart.AppVersion, .Chart.APIVersion... */
function chartObject(chartDir: string): Values {
  const meta = readValues(path.join(chartDir, "Chart.yaml"));
  return Object.fromEntries(
    Object.entries(meta).map(([key, value]) => [key === "apiVersion" ? "APIVersion" : key[0]?.toUpperCase() + key.slice(1), value]),
  );
}

/** YAML documents of one rendered template (empty ones, like a disabled template's, dropped). */
function documents(template: string, text: string): RenderedObject[] {
  const out: RenderedObject[] = [];
  for (const doc of parseAllDocuments(text, YAML_OPTIONS)) {
    if (doc.errors.length) throw new Error(`${template}: not YAML: ${doc.errors.map((e) => e.message).join("; ")}\n${text}`);
    const object: unknown = doc.toJS();
    if (object === null || object === undefined) continue;
    if (!isMap(object)) throw new Error(`${template}: a document that is not an object:\n${text}`);
    out.push({ template, object });
  }
  return out;
}

/**
 * The engine's own message for a failure inside a `define`: the package extracts the message only
 * for errors in the top template and throws an empty one otherwise, so it is asked again through
 * the function its WebAssembly module registers (the package's parse() has loaded it by then).
 */
function rawError(template: string, context: Values): string {
  const render = (globalThis as { Render?: (template: string, json: string) => string }).Render;
  return render ? render(template, JSON.stringify(context)) : "template execution failed";
}

export async function renderChart(chartDir: string, options: RenderOptions = {}): Promise<RenderedChart> {
  const values = coalesceValues(readValues(path.join(chartDir, "values.yaml")), options.values ?? {});
  const chart = chartObject(chartDir);
  const release = {
    Name: options.releaseName ?? "agentbox",
    Namespace: options.namespace ?? "default",
    Service: "Helm",
    IsInstall: true,
    IsUpgrade: false,
    Revision: 1,
  };
  const templatesDir = path.join(chartDir, "templates");
  const files = fs.readdirSync(templatesDir).sort();
  // Helm parses every file of the chart into one set, so a `define` anywhere is usable everywhere;
  // files whose names start with `_` render nothing of their own.
  const helpers = files
    .filter((f) => f.startsWith("_"))
    .map((f) => fs.readFileSync(path.join(templatesDir, f), "utf8"))
    .join("\n");
  const objects: RenderedObject[] = [];
  let notes = "";
  for (const file of files) {
    if (file.startsWith("_")) continue;
    const name = `templates/${file}`;
    const source = fs.readFileSync(path.join(templatesDir, file), "utf8");
    const context = {
      Values: values,
      Release: release,
      Chart: chart,
      Template: { Name: `${chart.Name}/${name}`, BasePath: `${chart.Name}/templates` },
    };
    let text: string;
    try {
      text = await executeGoTemplate(`${helpers}\n${source}`, context);
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message || rawError(`${helpers}\n${source}`, context)}`);
    }
    if (file === "NOTES.txt") notes = text.trim();
    else objects.push(...documents(name, text));
  }
  return { objects, notes };
}
