// Settings of the built-in embedding model's scheduler: how requests are cut into jobs, how much
// one tenant may have waiting, how long a request may take, and whether the model loads at start.
// Declared once; read where the embedding service is made (src/main.ts).
import { defineSettings, readSettings, settingsOf } from "../settings/kernel.js";

export interface EmbeddingsConfig {
  /** Load the built-in model at start, in the background (else on the first request). */
  preload: boolean;
  /** Longest a request to the built-in model may take, waiting for the load and its turn included, ms. */
  timeoutMs: number;
  /** Inputs one tenant may have waiting or being embedded at once (429 past it). */
  tenantInputs: number;
  /** Most inputs in one job (one turn of the model). */
  jobInputs: number;
  /** Most characters in one job (a single longer input is a job of its own). */
  jobChars: number;
}

const setting = settingsOf("inference");

export const embeddingsSettingsSchema = defineSettings({
  preload: setting.boolean("AGENTBOX_EMBEDDING_PRELOAD", {
    table: "embeddings",
    default: true,
    doc: "Load the model at start, in the background after the service listens (~0.5 s of one core in its worker thread and ~85 MB of memory; start-up is not delayed). A request that arrives while it loads waits for it, within its deadline. `false`: loaded by the first request.",
  }),
  timeoutS: setting.number("AGENTBOX_EMBEDDING_TIMEOUT_S", {
    table: "embeddings",
    default: 60,
    doc: "Longest a request to the built-in model may take, waiting for the load and for its turn included. Past it: 503 `at_capacity`, `Retry-After: 5`, and its queued jobs are dropped.",
  }),
  // Two requests of the largest size (2,048 inputs each).
  tenantInputs: setting.number("AGENTBOX_EMBEDDING_TENANT_INPUTS", {
    table: "embeddings",
    default: 4096,
    defaultDoc: "`4096` (two requests of the largest size)",
    atLeast: 1,
    doc: "Inputs one tenant (all its keys, the vectors text routes included) may have waiting or being embedded at once. A request that would pass it: 429 `rate_limited`, `Retry-After: 5`, at once.",
  }),
  // On a quiet core 32 short sentences take ~0.2 s and 8 KB of text ~0.4 s (several times that on
  // a busy host): about the longest another tenant's small request waits for the job running when
  // it arrives. Long texts cost per character, so smaller jobs of them lose little throughput.
  jobInputs: setting.number("AGENTBOX_EMBEDDING_JOB_INPUTS", {
    table: "embeddings",
    default: 32,
    atLeast: 1,
    doc: "Most inputs in one job (32 short sentences take ~0.2 s on one core).",
  }),
  jobChars: setting.number("AGENTBOX_EMBEDDING_JOB_CHARS", {
    table: "embeddings",
    default: 8192,
    atLeast: 1,
    doc: "Most characters in one job (~0.4 s of the model on a quiet core); a single longer input (up to 100,000 characters) is a job of its own.",
  }),
});

export function loadEmbeddingsConfig(env: NodeJS.ProcessEnv = process.env): EmbeddingsConfig {
  const s = readSettings(embeddingsSettingsSchema, env);
  return {
    preload: s.preload,
    timeoutMs: s.timeoutS * 1000,
    tenantInputs: s.tenantInputs,
    jobInputs: s.jobInputs,
    jobChars: s.jobChars,
  };
}
