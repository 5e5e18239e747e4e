// Constructs the vectors area and the embeddings service for the entry point, and closes them.
import type { Database } from "better-sqlite3";
import type { Logger } from "pino";
import { EmbeddingService } from "../inference/embeddings.js";
import type { ProviderRegistry } from "../inference/providers.js";
import { EmbeddedEngine } from "./embedded.js";
import { VectorLimits, type VectorLimitsConfig } from "./limits.js";
import { VectorService } from "./service.js";
import { VectorDb } from "./store.js";

export interface VectorsArea {
  embeddings: EmbeddingService;
  vectors: VectorService;
  /** Loads every index into memory in the background (the first search need not pay for it). */
  warm(): void;
  /** Saves the graphs and closes the vectors database and the embedding model. */
  close(): Promise<void>;
}

export function openVectors(
  dataDir: string,
  db: Database,
  providers: ProviderRegistry,
  logger: Logger,
  limits: VectorLimitsConfig,
): VectorsArea {
  const store = new VectorDb(dataDir);
  const engine = new EmbeddedEngine(store, dataDir, (msg, fields) => logger.info(fields ?? {}, msg));
  const embeddings = new EmbeddingService(db, providers);
  const vectors = new VectorService(store, engine, new VectorLimits(store, limits), embeddings);
  return {
    embeddings,
    vectors,
    warm: () => {
      engine.warm(vectors.allSpecs()).catch((err) => logger.error({ err }, "loading vector indexes failed"));
    },
    close: async () => {
      await engine.close();
      store.close();
      await embeddings.close();
    },
  };
}
