// This machine's hardware for deployments: the CPU (model, cores, memory) and NVIDIA GPUs as
// `nvidia-smi` reports them (none when the tool is absent), or as the operator declares them
// (AGENTBOX_NODE_GPUS). Read once and cached: hardware does not change while the service runs, and
// nvidia-smi takes a noticeable fraction of a second.
import { execFile } from "node:child_process";
import os from "node:os";

export interface Accelerator {
  accelerator_id: string;
  /** "cpu" or "gpu". */
  hw_type: "cpu" | "gpu";
  /** The model as the hardware names itself ("NVIDIA A100-SXM4-80GB", "AMD EPYC 7B13"). */
  hw_model: string;
  /** How it is attached: "pcie" for a GPU, "host" for the CPU. */
  hw_link: string;
  /** Memory in whole GiB (the host's RAM for the CPU, the GPU's own memory for a GPU); clients read an integer. */
  hw_memory: number;
  /** How many of them this machine has (cores for the CPU, 1 per GPU entry). */
  count: number;
  /** Self-hosted: the hardware costs nothing per hour here. */
  pricing: number;
  provider: "local";
  status: "available";
  updated_at: string;
}

const GIB = 2 ** 30;

function cpuAccelerator(at: string): Accelerator {
  const cpus = os.cpus();
  return {
    accelerator_id: "cpu",
    hw_type: "cpu",
    hw_model: (cpus[0]?.model ?? "unknown CPU").trim(),
    hw_link: "host",
    hw_memory: Math.round(os.totalmem() / GIB),
    count: os.availableParallelism(),
    pricing: 0,
    provider: "local",
    status: "available",
    updated_at: at,
  };
}

/** Parses `nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits` output. */
export function parseNvidiaSmi(text: string, at: string): Accelerator[] {
  const out: Accelerator[] = [];
  for (const line of text.split("\n")) {
    const [index, name, memMib] = line.split(",").map((s) => s.trim());
    if (!index || !name || !/^\d+$/.test(index)) continue;
    out.push({
      accelerator_id: `gpu-${index}`,
      hw_type: "gpu",
      hw_model: name,
      hw_link: "pcie",
      hw_memory: Math.round(Number(memMib) / 1024) || 0,
      count: 1,
      pricing: 0,
      provider: "local",
      status: "available",
      updated_at: at,
    });
  }
  return out;
}

function nvidiaGpus(at: string): Promise<Accelerator[]> {
  return new Promise((resolve) => {
    execFile(
      "nvidia-smi",
      ["--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"],
      { timeout: 5000, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
      (err, stdout) => resolve(err ? [] : parseNvidiaSmi(stdout, at)),
    );
  });
}

/** GPUs an operator declares (AGENTBOX_NODE_GPUS): `count` of the model `model`. */
export interface DeclaredGpus {
  model: string;
  count: number;
}

/**
 * Parses AGENTBOX_NODE_GPUS: comma-separated `[COUNT:]MODEL` entries ("2:NVIDIA A100 80GB,NVIDIA T4");
 * `none` (or nothing) declares no GPU at all. Throws on a malformed entry.
 */
export function parseDeclaredGpus(raw: string): DeclaredGpus[] {
  const text = raw.trim();
  if (text === "" || text.toLowerCase() === "none") return [];
  return text.split(",").map((entry) => {
    const m = /^\s*(?:(\d+)\s*:)?\s*(\S(?:.*\S)?)\s*$/.exec(entry);
    const count = m?.[1] === undefined ? 1 : Number(m[1]);
    if (!m || !Number.isInteger(count) || count < 1 || count > 64)
      throw new Error(`each entry must be [COUNT:]MODEL with COUNT 1-64 (e.g. '2:NVIDIA T4'), got '${entry.trim()}'`);
    return { model: m[2] as string, count };
  });
}

/** The declared GPUs as this machine's, one entry per GPU (their memory unknown: 0). */
function declaredGpus(declared: readonly DeclaredGpus[], at: string): Accelerator[] {
  const lines = declared.flatMap((d) => Array.from({ length: d.count }, () => d.model));
  return parseNvidiaSmi(lines.map((model, i) => `${i}, ${model}, 0`).join("\n"), at);
}

/** How many GPUs of one model a node has, and how many no deployment holds (what placement reads). */
export interface GpuKind {
  model: string;
  count: number;
  free: number;
}

export class Accelerators {
  private cached: Promise<Accelerator[]> | undefined;

  /** `declared`: AGENTBOX_NODE_GPUS, which replaces detection; undefined: nvidia-smi says. */
  constructor(private readonly declared?: readonly DeclaredGpus[]) {}

  list(): Promise<Accelerator[]> {
    if (!this.cached) {
      const at = new Date().toISOString();
      const gpus = this.declared ? Promise.resolve(declaredGpus(this.declared, at)) : nvidiaGpus(at);
      this.cached = gpus.then((list) => [cpuAccelerator(at), ...list]);
    }
    return this.cached;
  }

  /**
   * Whether `gpuModel` names a GPU here, `count` times: its id ("gpu-0"), or its model in any
   * spelling clients use ("NVIDIA_T4_16GB", "nvidia-t4", "Tesla T4": every word of the name other
   * than the vendor and a memory size must be a word of the GPU's model).
   */
  async hasGpu(gpuModel: string, count: number): Promise<boolean> {
    return (await this.list()).filter((a) => gpuMatches(gpuModel, a)).length >= count;
  }

  /** Whether `gpuModel` names this host's CPU ("cpu", or the CPU's model): clients that always send a gpu_model. */
  async isCpu(gpuModel: string): Promise<boolean> {
    const cpu = (await this.list())[0] as Accelerator;
    const name = gpuModel.trim().toLowerCase();
    return name === "cpu" || name === cpu.hw_model.toLowerCase();
  }
}

/** What a deployment holds of a machine's GPUs: `count` of those its `gpuModel` names. */
export interface GpuHolding {
  gpuModel: string;
  count: number;
}

/** The GPUs of `accelerators` that none of `held` takes (each holding takes GPUs it names, first come). Pure. */
export function freeGpus(accelerators: readonly Accelerator[], held: readonly GpuHolding[]): Accelerator[] {
  const free = accelerators.filter((a) => a.hw_type === "gpu");
  for (const h of held) {
    let want = h.count;
    for (let i = 0; i < free.length && want > 0; ) {
      if (gpuMatches(h.gpuModel, free[i] as Accelerator)) {
        free.splice(i, 1);
        want--;
      } else i++;
    }
  }
  return free;
}

/** A machine's GPUs by model, with how many of each `held` leaves free (what a node reports for placement). Pure. */
export function gpuKinds(accelerators: readonly Accelerator[], held: readonly GpuHolding[]): GpuKind[] {
  const free = new Set(freeGpus(accelerators, held));
  const kinds = new Map<string, GpuKind>();
  for (const a of accelerators) {
    if (a.hw_type !== "gpu") continue;
    const kind = kinds.get(a.hw_model) ?? { model: a.hw_model, count: 0, free: 0 };
    kind.count++;
    if (free.has(a)) kind.free++;
    kinds.set(a.hw_model, kind);
  }
  return [...kinds.values()];
}

/** Whether a client's `gpu_model` names GPUs of the model `hwModel` (another node's, known by model only). */
export function gpuModelMatches(gpuModel: string, hwModel: string): boolean {
  return gpuMatches(gpuModel, { accelerator_id: "", hw_type: "gpu", hw_model: hwModel });
}

/** Whether a client's `gpu_model` names this GPU (see Accelerators.hasGpu). */
export function gpuMatches(gpuModel: string, a: Pick<Accelerator, "accelerator_id" | "hw_type" | "hw_model">): boolean {
  if (a.hw_type !== "gpu") return false;
  if (a.accelerator_id === gpuModel.toLowerCase()) return true;
  const want = words(gpuModel).filter((w) => w !== "nvidia" && !/^\d+gb$/.test(w));
  const have = new Set(words(a.hw_model));
  return want.length > 0 && want.every((w) => have.has(w));
}

function words(name: string): string[] {
  return name
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "");
}
