// Settings of the vectors area (search width, graph saving, target recall), declared once and read
// by openVectors() (src/vectors/setup.ts).
import { defineSettings, readSettings, type Settings, settingsOf } from "../settings/kernel.js";

const setting = settingsOf("vectors");

export const vectorSettingsSchema = defineSettings({
  searchEf: setting.integer("AGENTBOX_VECTOR_SEARCH_EF", {
    table: "service",
    default: 48,
    minimum: 1,
    maximum: 4096,
    doc: "Starting vector search width (HNSW ef at search time, 1–4096): how many candidates a search walks in the graph (the best are then scored exactly) until the index has measured its recall and chosen its own width for its `target_recall`. Higher is better recall and slower search (see design.md, Vectors).",
  }),
  saveIdleS: setting.integer("AGENTBOX_VECTOR_SAVE_IDLE_S", {
    table: "service",
    default: 30,
    minimum: 1,
    maximum: 3600,
    doc: "Seconds without writes after which an index's changed graph is saved to disk (checked every 30 s or this, whichever is shorter; while writes go on, every 5 minutes; always on a graceful stop). A crash after the save leaves no graph to rebuild at the next start. The index's vectors file (read by searches while the index loads after a start; after a crash that followed writes, brought up to date with them) is written after the same idle time, and on a graceful stop; every acknowledged write batch is appended to its side log (`<index>.vectors.log`, emptied by each new file), so a crash before the first save is covered too.",
  }),
  targetRecall: setting.number("AGENTBOX_VECTOR_TARGET_RECALL", {
    table: "service",
    default: 0.97,
    minimum: 0.5,
    maximum: 1,
    doc: "recall@10 an index's searches should reach unless it sets its own `target_recall` (0.5–1): each index measures its recall on a sample of its own vectors and widens or narrows its search width to keep it.",
  }),
  unindexedMb: setting.integer("AGENTBOX_VECTOR_UNINDEXED_MB", {
    table: "service",
    default: 8,
    minimum: 1,
    maximum: 4096,
    doc: "MiB of an index's vectors (4 bytes a dimension) that may wait to join its graph (16,384 vectors of 128 dimensions at the default). Every search scores the waiting ones exactly, so this bounds what a search costs during a bulk load: past it, an upsert waits for the graph to catch up before it is written (acknowledged at the speed the graph is built). Not while a graph loads or is rebuilt (searches are exact then anyway).",
  }),
  releaseS: setting.integer("AGENTBOX_VECTOR_RELEASE_S", {
    table: "service",
    default: 30,
    minimum: 0,
    maximum: 3600,
    doc: "In a cluster on PostgreSQL: seconds a node keeps in memory a vector index that another node owns now (a node joined or came back, or the index was answered here while its owner could not be reached) before it drops it. Requests routed by a view of the nodes a heartbeat old still reach it meanwhile (see cluster.md, Vector indexes in a cluster).",
  }),
});

export type VectorSettings = Settings<typeof vectorSettingsSchema>;

export function vectorSettings(env: NodeJS.ProcessEnv = process.env): VectorSettings {
  return readSettings(vectorSettingsSchema, env);
}

/** The declared defaults, for an engine or index made without settings (unit tests): no variable is read. */
export const VECTOR_DEFAULTS: VectorSettings = readSettings(vectorSettingsSchema, {});
