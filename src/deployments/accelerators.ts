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
  /** Memory in GiB (the host's RAM for the CPU, the GPU's own memory for a GPU). */
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
    hw_memory: Math.round((os.totalmem() / GIB) * 10) / 10,
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
      hw_memory: Math.round((Number(memMib) / 1024) * 10) / 10 || 0,
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

  /** Whether `gpuModel` names a GPU here (by its id, "gpu-0", or its model name, case-insensitively, in part). */
  async hasGpu(gpuModel: string, count: number): Promise<boolean> {
    const want = gpuModel.toLowerCase();
    const gpus = (await this.list()).filter(
      (a) => a.hw_type === "gpu" && (a.accelerator_id === want || a.hw_model.toLowerCase().includes(want)),
    );
    return gpus.length >= count;
  }
}
