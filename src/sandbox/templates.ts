// Built-in templates. Every template runs the same runtime (python, node, bash); a template fixes
// the defaults a client gets and what GET /templates reports.
import type { Limits } from "./settings.js";

export interface Template {
  id: string;
  name: string;
  description: string;
  vcpu_count: number;
  memory_mb: number;
  disk_size_mb: number;
  visibility: "public" | "private";
  created_at: string;
  updated_at: string;
}

const CREATED = "2026-01-01T00:00:00.000Z";

export function builtInTemplates(limits: Limits): Template[] {
  const base = {
    vcpu_count: limits.cpus,
    memory_mb: limits.memoryMb,
    disk_size_mb: limits.diskMb,
    visibility: "public" as const,
    created_at: CREATED,
    updated_at: CREATED,
  };
  return [
    {
      id: "python-base-v1",
      name: "python-base-v1",
      description: "Python 3 with Node.js and bash; stateful kernels for all four languages",
      ...base,
    },
    {
      id: "javascript-base-v1",
      name: "javascript-base-v1",
      description: "Node.js (JavaScript and TypeScript) with Python 3 and bash",
      ...base,
    },
  ];
}
