// The gateway's view of the local models that need no providers entry: the pulled models of the
// data dir (rescanned on every list and lookup, so a pull shows up without a restart; each is loaded
// on its first request and stays loaded) and the one GGUF file named by AGENTBOX_MODEL (loaded at
// start). Added to the provider registry as a "last" source: the providers file wins a name clash.
import path from "node:path";
import { LocalProvider } from "../inference/local.js";
import { type ModelSource, parseProviders } from "../inference/providers.js";
import type { ModelInfo, Provider } from "../inference/types.js";
import { findModel, listModels } from "./registry.js";

export interface LocalModelDefaults {
  contextSize: number;
  parallel: number;
  gpu: boolean;
}

const TIMEOUT_MS = 60_000;

export class LocalModels implements ModelSource {
  readonly name = "models";
  private readonly loaded = new Map<string, { provider: LocalProvider; version: string }>();
  private readonly fixed: Provider | undefined;

  constructor(
    private readonly dataDir: string,
    private readonly defaults: LocalModelDefaults,
    /** AGENTBOX_MODEL: a GGUF path served under its file name (without .gguf). */
    modelPath?: string,
  ) {
    if (modelPath !== undefined) {
      // The providers file's own checks (exists, is a GGUF file), with errors naming the setting.
      const registry = parseProviders(
        {
          providers: [
            {
              name: "local",
              type: "local",
              model_path: path.resolve(modelPath),
              context_size: defaults.contextSize,
              parallel: defaults.parallel,
              gpu: defaults.gpu,
            },
          ],
        },
        "AGENTBOX_MODEL:",
      );
      this.fixed = registry.providers[0];
    }
  }

  models(): ModelInfo[] {
    const out = this.fixed ? this.fixed.models() : [];
    for (const m of listModels(this.dataDir)) {
      out.push({ id: m.name, object: "model", created: Math.floor(Date.parse(m.created_at) / 1000), owned_by: "local" });
    }
    return out;
  }

  resolve(model: string): Provider | undefined {
    if (this.fixed?.serves(model)) return this.fixed;
    const m = findModel(this.dataDir, model);
    if (!m) return undefined;
    // A file replaced under the same name (removed and pulled again) is loaded afresh.
    const version = `${m.size}:${m.created_at}`;
    const hit = this.loaded.get(m.name);
    if (hit && hit.version === version) return hit.provider;
    if (hit) void hit.provider.close();
    const provider = new LocalProvider({
      name: "local",
      modelPath: m.path,
      modelName: m.name,
      contextSize: this.defaults.contextSize,
      batchSize: undefined,
      threads: undefined,
      parallel: this.defaults.parallel,
      gpu: this.defaults.gpu,
      timeoutMs: TIMEOUT_MS,
      created: Math.floor(Date.parse(m.created_at) / 1000),
    });
    this.loaded.set(m.name, { provider, version });
    return provider;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.loaded.values()].map((l) => l.provider.close()));
    await this.fixed?.close();
  }
}
