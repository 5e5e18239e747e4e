// GET /sandboxes/{id}/metrics (PRODUCT.md section 2: exact keys).
import { Type } from "@sinclair/typebox";

export const SandboxMetrics = Type.Object(
  {
    timestamp: Type.String({ format: "date-time" }),
    cpu_usage: Type.Number({
      description: "Percent of the sandbox's CPU allowance used since the previous call (first call: since start)",
    }),
    memory_usage: Type.Number({ description: "MiB in use by the sandbox's processes and its in-memory files" }),
    memory_total: Type.Number({ description: "The sandbox's memory limit, MiB" }),
    disk_read: Type.Integer({ description: "Bytes read by the sandbox's processes (read syscalls; see docs/api.md)" }),
    disk_write: Type.Integer({ description: "Bytes written by the sandbox's processes (write syscalls; see docs/api.md)" }),
    network_rx: Type.Integer({ description: "Bytes received on the sandbox's network interfaces" }),
    network_tx: Type.Integer({ description: "Bytes sent on the sandbox's network interfaces" }),
  },
  { additionalProperties: false },
);
