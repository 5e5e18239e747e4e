// The vector limits: each tenant's quotas (indexes, vectors, bytes) and the node's bound on the
// vector bytes held in memory. Checked against the store's running sums inside each write, before
// it commits: a refused write keeps nothing, and writes racing each other cannot both slip under.
import { ApiError } from "../errors.js";
import type { Admit } from "./engine.js";
import type { VectorUsage } from "./store.js";

const MiB = 2 ** 20;
/** A quota frees only when the tenant deletes something: a minute before trying again. */
const QUOTA_RETRY_S = 60;
/** The node frees when any tenant deletes vectors or indexes. */
const CAPACITY_RETRY_S = 30;

/** One tenant's vector quotas as they apply now (the operator's, or the defaults). */
export interface VectorQuota {
  maxVectorIndexes: number;
  maxVectors: number;
  vectorStorageMb: number;
}

export interface VectorLimitsConfig {
  quotaOf(tenantId: string): VectorQuota;
  /** Bytes of every tenant's vectors together this node may hold (they are all in memory), MiB. */
  memoryMb: number;
}

/** The running sums the limits are checked against (the store keeps them). */
export interface UsageSource {
  usageOf(tenantId: string): VectorUsage;
  totalBytes(): number;
}

const quotaExceeded = (message: string) => new ApiError("quota_exceeded", message, QUOTA_RETRY_S);

export class VectorLimits {
  constructor(
    private readonly usage: UsageSource,
    private readonly config: VectorLimitsConfig,
  ) {}

  /** Refuses a new index when the tenant already has as many as its quota allows. */
  readonly admitIndex = (tenantId: string): ((usage: VectorUsage) => void) => {
    return (usage) => {
      const max = this.config.quotaOf(tenantId).maxVectorIndexes;
      if (usage.indexes >= max)
        throw quotaExceeded(`This tenant already has ${usage.indexes} vector indexes, its quota of ${max}; delete one first`);
    };
  };

  /** Refuses a write that would take the tenant over a quota or the node over its vector memory;
   * a write that adds nothing (a delete, a smaller replacement) always passes. */
  admit(tenantId: string): Admit {
    return (added) => {
      const now = this.usage.usageOf(tenantId);
      const quota = this.config.quotaOf(tenantId);
      if (added.vectors > 0 && now.vectors + added.vectors > quota.maxVectors)
        throw quotaExceeded(
          `This write would take this tenant to ${now.vectors + added.vectors} vectors, over its max_vectors quota of ${quota.maxVectors}; ` +
            "delete vectors or ask the operator for a larger max_vectors",
        );
      if (added.bytes <= 0) return;
      if (now.bytes + added.bytes > quota.vectorStorageMb * MiB)
        throw quotaExceeded(
          `This write would take this tenant's vectors to ${now.bytes + added.bytes} bytes, over its vector_storage_mb quota of ` +
            `${quota.vectorStorageMb} MiB (embedding, metadata JSON and id of each vector); delete vectors or ask the operator for a larger vector_storage_mb`,
        );
      if (this.usage.totalBytes() + added.bytes > this.config.memoryMb * MiB)
        throw new ApiError(
          "at_capacity",
          `The service holds as many vector bytes as it may keep in memory (${this.config.memoryMb} MiB, AGENTBOX_VECTOR_MEMORY_MB); try again later`,
          CAPACITY_RETRY_S,
        );
    };
  }
}
