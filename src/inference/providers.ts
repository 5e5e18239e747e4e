// The providers file: which upstreams the gateway routes to, validated once at start with errors
// that name the bad field. Model ids route by exact name first (the `models` lists, a local
// provider's `model_name`), then by the first provider whose `model_prefix` the id starts with.
import fs from "node:fs";
import path from "node:path";
import { ApiError } from "../errors.js";
import { LocalProvider, type LocalProviderConfig } from "./local.js";
import { OpenAIProvider, type OpenAIProviderConfig } from "./openai.js";
import type { Capability, ListedModel, ModelInfo, Provider } from "./types.js";

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const COMMON = ["name", "type", "timeout_ms", "retries"];
const OPENAI_FIELDS = [...COMMON, "base_url", "api_key_env", "models", "model_prefix", "strip_prefix", "max_connections", "headers"];
const LOCAL_FIELDS = [...COMMON, "model_path", "model_name", "context_size", "threads", "parallel", "gpu", "batch_size"];

class Bad extends Error {}

function fail(where: string, msg: string): never {
  throw new Bad(`${where} ${msg}`);
}

function str(o: Record<string, unknown>, key: string, where: string, required: true): string;
function str(o: Record<string, unknown>, key: string, where: string, required: false): string | undefined;
function str(o: Record<string, unknown>, key: string, where: string, required: boolean): string | undefined {
  const v = o[key];
  if (v === undefined) {
    if (required) fail(`${where}.${key}`, "is required");
    return undefined;
  }
  if (typeof v !== "string" || v === "") fail(`${where}.${key}`, `must be a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

function int(o: Record<string, unknown>, key: string, where: string, min: number, max: number, fallback: number): number {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
    fail(`${where}.${key}`, `must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
  return v;
}

function bool(o: Record<string, unknown>, key: string, where: string, fallback: boolean): boolean {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== "boolean") fail(`${where}.${key}`, `must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function parseProvider(raw: unknown, where: string, env: NodeJS.ProcessEnv, baseDir: string): Provider {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) fail(where, "must be an object");
  const o = raw as Record<string, unknown>;
  const name = str(o, "name", where, true);
  if (!NAME.test(name)) fail(`${where}.name`, `must be 1-64 letters, digits, '_', '.', '-', got ${JSON.stringify(name)}`);
  const type = o.type;
  if (type !== "openai" && type !== "local") fail(`${where}.type`, `must be "openai" or "local", got ${JSON.stringify(type)}`);
  if ("api_key" in o)
    fail(`${where}.api_key`, "is not accepted: put the key in an environment variable and give that variable's name in api_key_env");
  const allowed = type === "openai" ? OPENAI_FIELDS : LOCAL_FIELDS;
  for (const key of Object.keys(o)) {
    if (!allowed.includes(key)) fail(`${where}.${key}`, `is not a field of a "${type}" provider (fields: ${allowed.join(", ")})`);
  }
  const timeoutMs = int(o, "timeout_ms", where, 1, 3_600_000, 60_000);
  const retries = int(o, "retries", where, 0, 10, type === "openai" ? 1 : 0);

  if (type === "openai") {
    const baseUrl = str(o, "base_url", where, true);
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      fail(`${where}.base_url`, `must be an http:// or https:// URL, got ${JSON.stringify(baseUrl)}`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:")
      fail(`${where}.base_url`, `must be an http:// or https:// URL, got ${JSON.stringify(baseUrl)}`);
    const keyEnv = str(o, "api_key_env", where, false);
    let apiKey: string | undefined;
    if (keyEnv !== undefined) {
      if (!ENV_NAME.test(keyEnv)) {
        // The value is not repeated: it may be the key itself, put here by mistake.
        fail(`${where}.api_key_env`, "must be the NAME of an environment variable (letters, digits, '_'), not the key");
      }
      apiKey = env[keyEnv];
      if (!apiKey) fail(`${where}.api_key_env`, `names the environment variable ${keyEnv}, which is not set`);
    }
    let models: string[] = [];
    if (o.models !== undefined) {
      if (!Array.isArray(o.models) || o.models.some((m) => typeof m !== "string" || m === "" || m.length > 256))
        fail(`${where}.models`, "must be an array of non-empty model ids");
      models = o.models as string[];
    }
    const prefix = str(o, "model_prefix", where, false);
    if (models.length === 0 && prefix === undefined) fail(where, "needs 'models' (a list of model ids) or 'model_prefix'");
    let headers: Record<string, string> = {};
    if (o.headers !== undefined) {
      if (typeof o.headers !== "object" || o.headers === null || Array.isArray(o.headers))
        fail(`${where}.headers`, "must be an object of header names to string values");
      for (const [k, v] of Object.entries(o.headers)) {
        if (typeof v !== "string") fail(`${where}.headers.${k}`, "must be a string");
      }
      headers = o.headers as Record<string, string>;
    }
    const config: OpenAIProviderConfig = {
      name,
      baseUrl: url,
      apiKey,
      models,
      modelPrefix: prefix,
      stripPrefix: bool(o, "strip_prefix", where, false),
      timeoutMs,
      retries,
      maxConnections: int(o, "max_connections", where, 1, 4096, 128),
      headers,
    };
    return new OpenAIProvider(config);
  }

  const modelPath = path.resolve(baseDir, str(o, "model_path", where, true));
  let stat: fs.Stats;
  try {
    stat = fs.statSync(modelPath);
  } catch {
    fail(`${where}.model_path`, `names ${modelPath}, which does not exist`);
  }
  if (!stat.isFile()) fail(`${where}.model_path`, `names ${modelPath}, which is not a file`);
  const fd = fs.openSync(modelPath, "r");
  const magic = Buffer.alloc(4);
  fs.readSync(fd, magic, 0, 4, 0);
  fs.closeSync(fd);
  if (magic.toString("latin1") !== "GGUF") fail(`${where}.model_path`, `names ${modelPath}, which is not a GGUF file`);
  const threads = o.threads === undefined ? undefined : int(o, "threads", where, 1, 1024, 1);
  const config: LocalProviderConfig = {
    name,
    modelPath,
    modelName: str(o, "model_name", where, false) ?? path.basename(modelPath).replace(/\.gguf$/i, ""),
    contextSize: int(o, "context_size", where, 16, 1 << 20, 4096),
    batchSize: o.batch_size === undefined ? undefined : int(o, "batch_size", where, 1, 1 << 16, 512),
    threads,
    parallel: int(o, "parallel", where, 1, 64, 1),
    gpu: bool(o, "gpu", where, false),
    timeoutMs,
    created: Math.floor(stat.mtimeMs / 1000),
  };
  return new LocalProvider(config);
}

/**
 * What the gateway routes to a provider's models: chat always, text completions and embeddings when
 * the provider implements them. (For an OpenAI-compatible upstream this is what the gateway forwards;
 * whether the upstream's model answers is the upstream's business.)
 */
export function capabilitiesOf(p: Provider): Capability[] {
  const out: Capability[] = ["chat"];
  if (p.completeText && p.streamText) out.push("completions");
  if (typeof (p as { embeddings?: unknown }).embeddings === "function") out.push("embeddings");
  return out;
}

/** Models of a source that does not say: every source serves GGUF models, which chat and complete text. */
const SOURCE_CAPABILITIES: Capability[] = ["chat", "completions"];

/**
 * A source of models other than the providers file (a deployment, the pulled models of the data
 * dir): it lists its models and hands out the Provider that serves one. The registry asks sources
 * added "first" before the providers file and sources added "last" after it, each in the order added.
 */
export interface ModelSource {
  readonly name: string;
  /** Models this source lists in GET /models (may change at any time; `scope` is the caller's tenant). */
  models(scope?: ModelScope): ModelInfo[];
  /** The provider serving `model`, or undefined when this source does not have it (for this tenant). */
  resolve(model: string, scope?: ModelScope): Provider | undefined;
  close?(): Promise<void>;
}

/** Who is asking: sources with per-tenant models (deployments) answer for this tenant only. */
export interface ModelScope {
  tenantId: string;
}

/** The configured providers and model sources, looked up by model id. */
export class ProviderRegistry {
  private readonly exact = new Map<string, Provider>();
  private readonly first: ModelSource[] = [];
  private readonly last: ModelSource[] = [];

  constructor(readonly providers: Provider[]) {
    for (const p of providers) {
      for (const m of p.models()) if (!this.exact.has(m.id)) this.exact.set(m.id, p);
    }
  }

  /** Adds a model source, asked before ("first", e.g. deployments) or after ("last") the providers file. */
  addSource(source: ModelSource, position: "first" | "last" = "first"): void {
    (position === "first" ? this.first : this.last).push(source);
  }

  removeSource(source: ModelSource): void {
    for (const list of [this.first, this.last]) {
      const i = list.indexOf(source);
      if (i >= 0) list.splice(i, 1);
    }
  }

  /** The provider serving `model`, or undefined. */
  find(model: string, scope?: ModelScope): Provider | undefined {
    for (const s of this.first) {
      const p = s.resolve(model, scope);
      if (p) return p;
    }
    const hit = this.exact.get(model);
    if (hit) return hit;
    for (const p of this.providers) if (p.serves(model)) return p;
    for (const s of this.last) {
      const p = s.resolve(model, scope);
      if (p) return p;
    }
    return undefined;
  }

  /** The provider serving `model`, or a 404 model_not_found. */
  resolve(model: string, scope?: ModelScope): Provider {
    const hit = this.find(model, scope);
    if (hit) return hit;
    throw new ApiError(
      "model_not_found",
      `The model '${model}' does not exist or is not served here; GET /v1/inference/models lists the models`,
    );
  }

  /** Every model a request can name (all of them chat models), each with its capabilities. */
  models(scope?: ModelScope): ListedModel[] {
    const seen = new Set<string>();
    const out: ListedModel[] = [];
    const add = (list: ModelInfo[], capabilities: Capability[]) => {
      for (const m of list) {
        if (seen.has(m.id)) continue;
        seen.add(m.id);
        out.push({ ...m, capabilities: m.capabilities ?? capabilities });
      }
    };
    for (const s of this.first) add(s.models(scope), SOURCE_CAPABILITIES);
    for (const p of this.providers) add(p.models(), capabilitiesOf(p));
    for (const s of this.last) add(s.models(scope), SOURCE_CAPABILITIES);
    return out;
  }

  /** Disposes local models and closes upstream connections (the sources' too). */
  async close(): Promise<void> {
    await Promise.allSettled([
      ...this.providers.map((p) => p.close()),
      ...[...this.first, ...this.last].map((s) => s.close?.() ?? Promise.resolve()),
    ]);
  }
}

/** Parses a providers document; `where` names the file in error messages. */
export function parseProviders(
  doc: unknown,
  where: string,
  env: NodeJS.ProcessEnv = process.env,
  baseDir = process.cwd(),
): ProviderRegistry {
  try {
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) fail(where, 'must be a JSON object like {"providers": [...]}');
    const top = doc as Record<string, unknown>;
    for (const key of Object.keys(top)) if (key !== "providers") fail(`${where}: ${key}`, "is not a known field (only 'providers')");
    if (!Array.isArray(top.providers)) fail(`${where}: providers`, "must be an array");
    const names = new Set<string>();
    const exactIds = new Map<string, string>();
    const parsed: Provider[] = [];
    top.providers.forEach((raw, i) => {
      const at = `${where}: providers[${i}]`;
      const p = parseProvider(raw, at, env, baseDir);
      if (names.has(p.name)) fail(`${at}.name`, `'${p.name}' is used by an earlier provider`);
      names.add(p.name);
      for (const m of p.models()) {
        const other = exactIds.get(m.id);
        if (other) fail(at, `lists model '${m.id}', which provider '${other}' lists too`);
        exactIds.set(m.id, p.name);
      }
      parsed.push(p);
    });
    return new ProviderRegistry(parsed);
  } catch (err) {
    if (err instanceof Bad) throw new Error(err.message);
    throw err;
  }
}

/**
 * Loads the providers file named by AGENTBOX_PROVIDERS_FILE (no file: no providers, every model is a
 * 404). Throws an Error naming the file and the bad field.
 */
export function loadProviders(file: string | undefined, env: NodeJS.ProcessEnv = process.env): ProviderRegistry {
  if (file === undefined || file === "") return new ProviderRegistry([]);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`providers file ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`providers file ${file}: is not valid JSON (${(err as Error).message})`);
  }
  return parseProviders(doc, `providers file ${file}`, env, path.dirname(path.resolve(file)));
}
