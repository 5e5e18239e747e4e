// Constructs the vectors area for the entry point (its text routes embed with the given service), and closes it.
import type { Logger } from "pino";
import type { Persistence } from "../store/persistence.js";
import { EmbeddedEngine } from "./embedded.js";
import { VectorLimits, type VectorLimitsConfig } from "./limits.js";
import { type TextEmbedder, VectorService } from "./service.js";
import { type VectorSettings, vectorSettings } from "./settings.js";
import { type VectorCatalog, VectorDb } from "./store.js";
import { PgVectorCatalog } from "./store-pg.js";

export interface VectorsArea {
  vectors: VectorService;
  /** Loads every index into memory in the background (the first search need not pay for it). */
  warm(): void;
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
  return {
    vectors,
    warm: () => {
      vectors
        .allSpecs()
        .then((specs) => engine.warm(specs))
        .catch((err) => logger.error({ err }, "loading vector indexes failed"));
    },
    close: async () => {
      await engine.close();
      await store.close();
    },
  };
}
