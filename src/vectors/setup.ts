// Constructs the vectors area for the entry point (its text routes embed with the given service), and closes it.
import type { Logger } from "pino";
import type { Persistence } from "../store/persistence.js";
import { EmbeddedEngine } from "./embedded.js";
import { IndexHolding } from "./holding.js";
import { VectorLimits, type VectorLimitsConfig } from "./limits.js";
import { type TextEmbedder, VectorService } from "./service.js";
import { type VectorSettings, vectorSettings } from "./settings.js";
import { type VectorCatalog, VectorDb } from "./store.js";
import { PgVectorCatalog } from "./store-pg.js";

export interface VectorsArea {
  vectors: VectorService;
  /** Loads every index this node owns (one node: every index) into memory in the background (the first search need not pay for it). */
  warm(): void;
  /**
   * In a cluster whose nodes share the records (PostgreSQL): what the cluster needs to route each
   * index's requests to its owner and to tell this node which indexes to hold. Undefined when the
   * records are this node's own (SQLite): every node then answers from its own file.
   */
  cluster?: {
    indexOf(tenantId: string, ref: string): Promise<string | undefined>;
    hold: IndexHolding["hold"];
  };
  /** Saves the graphs and closes the vectors database. */
  close(): Promise<void>;
}

/** The records in the vectors SQLite file of `dataDir`, or in PostgreSQL with a database URL (the
 * graphs are this node's cache either way, saved in `dataDir` and rebuilt from the records). */
export async function openVectors(
  dataDir: string,
  persistence: Persistence,
  embeddings: TextEmbedder,
  logger: Logger,
  limits: VectorLimitsConfig,
  settings: VectorSettings = vectorSettings(),
): Promise<VectorsArea> {
  const store: VectorCatalog = persistence.kind === "pg" ? await PgVectorCatalog.open(persistence.pool) : new VectorDb(dataDir);
  const engine = new EmbeddedEngine(store, dataDir, (msg, fields) => logger.info(fields ?? {}, msg), settings);
  const vectors = new VectorService(store, engine, new VectorLimits(store, limits), embeddings);
  const holding = new IndexHolding(vectors, engine, settings.releaseS * 1000, {
    info: (msg, fields) => logger.info(fields, msg),
    error: (msg, err) => logger.error({ err }, msg),
  });
  return {
    vectors,
    warm: () => holding.loadOwned(),
    cluster:
      persistence.kind === "pg"
        ? { indexOf: (tenantId, ref) => vectors.indexIdOf(tenantId, ref), hold: (ownership, changed) => holding.hold(ownership, changed) }
        : undefined,
    close: async () => {
      await engine.close();
      await store.close();
    },
  };
}
