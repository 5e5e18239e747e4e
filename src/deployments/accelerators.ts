// This machine's hardware for deployments: the CPU (model, cores, memory) and NVIDIA GPUs as
// `nvidia-smi` reports them (none when the tool is absent). Read once and cached: hardware does not
// change while the service runs, and nvidia-smi takes a noticeable fraction of a second.
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

export class Accelerators {
  private cached: Promise<Accelerator[]> | undefined;

  list(): Promise<Accelerator[]> {
    if (!this.cached) {
      const at = new Date().toISOString();
      this.cached = nvidiaGpus(at).then((gpus) => [cpuAccelerator(at), ...gpus]);
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

/** Whether a client's `gpu_model` names this GPU (see Accelerators.hasGpu). */
export function gpuMatches(gpuModel: string, a: Accelerator): boolean {
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
