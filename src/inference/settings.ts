// Settings of the inference gateway: the providers file, and how local models without a providers
// entry (pulled ones, AGENTBOX_MODEL) are run. Declared once; read at start-up (src/main.ts).
import { defineSettings, readSettings, settingsOf } from "../settings/kernel.js";

const setting = settingsOf("inference");

export const inferenceSettingsSchema = defineSettings({
  providersFile: setting.string("AGENTBOX_PROVIDERS_FILE", {
    table: "service",
    defaultDoc: "unset",
    doc: "Model providers for the inference gateway (see [inference.md](inference.md)).",
  }),
  model: setting.string("AGENTBOX_MODEL", {
    table: "service",
    defaultDoc: "unset",
    doc: "A GGUF file served as a local model under its file name, with no providers file (see [inference.md](inference.md#local-models-pull-agentbox_model)).",
  }),
  contextSize: setting.number("AGENTBOX_MODEL_CONTEXT_SIZE", {
    table: "service",
    default: 4096,
    doc: "Context (tokens) of pulled models and `AGENTBOX_MODEL`.",
  }),
  parallel: setting.number("AGENTBOX_MODEL_PARALLEL", {
    table: "service",
    default: 1,
    atLeast: 1,
    doc: "Requests one pulled/`AGENTBOX_MODEL` model generates at once (each takes a context of its own).",
  }),
  gpu: setting.boolean("AGENTBOX_MODEL_GPU", {
    table: "service",
    default: false,
    doc: "Run pulled/`AGENTBOX_MODEL` models on the GPU (needs a GPU build of node-llama-cpp).",
  }),
});

export interface InferenceSettings {
  providersFile: string | undefined;
  /** AGENTBOX_MODEL: one GGUF file served as a local model (no providers file needed). */
  model: string | undefined;
  /** How local models without a providers entry (pulled ones, AGENTBOX_MODEL) are run. */
  localModel: { contextSize: number; parallel: number; gpu: boolean };
}

export function inferenceSettings(env: NodeJS.ProcessEnv = process.env): InferenceSettings {
  const s = readSettings(inferenceSettingsSchema, env);
  return {
    providersFile: s.providersFile,
    model: s.model,
    localModel: { contextSize: s.contextSize, parallel: s.parallel, gpu: s.gpu },
  };
}
