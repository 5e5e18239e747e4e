// Constructs the vectors area for the entry point (its text routes embed with the given service), and closes it.
import type { Logger } from "pino";
import { EmbeddedEngine } from "./embedded.js";
import { VectorLimits, type VectorLimitsConfig } from "./limits.js";
import { type TextEmbedder, VectorService } from "./service.js";
import { type VectorSettings, vectorSettings } from "./settings.js";
import { VectorDb } from "./store.js";

export interface VectorsArea {
  vectors: VectorService;
  /** Loads every index into memory in the background (the first search need not pay for it). */
  warm(): void;
  /** Saves the graphs and closes the vectors database. */
  close(): Promise<void>;
}

export function openVectors(
  dataDir: string,
  embeddings: TextEmbedder,
  logger: Logger,
  limits: VectorLimitsConfig,
  settings: VectorSettings = vectorSettings(),
): VectorsArea {
  const store = new VectorDb(dataDir);
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
