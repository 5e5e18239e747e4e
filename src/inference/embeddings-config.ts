// Settings of the built-in embedding model's scheduler: how requests are cut into jobs, how much
// one tenant may have waiting, how long a request may take, and whether the model loads at start.
// Read once at start-up by src/config.ts.

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

type Num = (name: string, fallback: number) => number;
type Bool = (name: string, fallback: boolean) => boolean;

export function loadEmbeddingsConfig(num: Num, bool: Bool): EmbeddingsConfig {
  return {
    preload: bool("AGENTBOX_EMBEDDING_PRELOAD", true),
    timeoutMs: num("AGENTBOX_EMBEDDING_TIMEOUT_S", 60) * 1000,
    // Two requests of the largest size (2,048 inputs each).
    tenantInputs: Math.max(1, num("AGENTBOX_EMBEDDING_TENANT_INPUTS", 4096)),
    // On a quiet core 32 short sentences take ~0.2 s and 8 KB of text ~0.4 s (several times that on
    // a busy host): about the longest another tenant's small request waits for the job running when
    // it arrives. Long texts cost per character, so smaller jobs of them lose little throughput.
    jobInputs: Math.max(1, num("AGENTBOX_EMBEDDING_JOB_INPUTS", 32)),
    jobChars: Math.max(1, num("AGENTBOX_EMBEDDING_JOB_CHARS", 8192)),
  };
}
