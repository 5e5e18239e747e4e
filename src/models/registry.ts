// The pulled models of a data dir: GGUF files in <data dir>/models, each with a sidecar
// `<name>.gguf.json` recording where it came from, its size and sha256. The directory is the
// registry (no database rows), so a file copied in by hand is a model too (without a recorded
// sha256), and the service sees a pull without a restart. Downloads in progress are
// `<name>.gguf.partial` and are never listed.
import fs from "node:fs";
import path from "node:path";

/** A model name: also its file name (plus `.gguf`), so no separators and no leading dot. */
export const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export interface PulledModel {
  name: string;
  path: string;
  size: number;
  /** Hex sha256 recorded at pull time; null for a file put in the directory by hand. */
  sha256: string | null;
  /** The URL (or hf: reference) it was pulled from. */
  source: string | null;
  /** When it was pulled (ISO time), or the file's mtime for a file put there by hand. */
  created_at: string;
}

interface Sidecar {
  sha256?: unknown;
  source?: unknown;
  pulled_at?: unknown;
}

export function modelsDir(dataDir: string): string {
  return path.join(dataDir, "models");
}

export function modelFile(dataDir: string, name: string): string {
  return path.join(modelsDir(dataDir), `${name}.gguf`);
}

function readSidecar(file: string): Sidecar {
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(`${file}.json`, "utf8"));
    return typeof parsed === "object" && parsed !== null ? (parsed as Sidecar) : {};
  } catch {
    return {};
  }
}

/** One model by name, or undefined (a missing file, a bad name, a directory). */
export function findModel(dataDir: string, name: string): PulledModel | undefined {
  if (!MODEL_NAME.test(name) || name.endsWith(".gguf")) return undefined;
  const file = modelFile(dataDir, name);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return undefined;
  }
  if (!stat.isFile()) return undefined;
  const meta = readSidecar(file);
  return {
    name,
    path: file,
    size: stat.size,
    sha256: typeof meta.sha256 === "string" ? meta.sha256 : null,
    source: typeof meta.source === "string" ? meta.source : null,
    created_at: typeof meta.pulled_at === "string" ? meta.pulled_at : stat.mtime.toISOString(),
  };
}

/** Every model in the data dir's models directory, by name. */
export function listModels(dataDir: string): PulledModel[] {
  let names: string[];
  try {
    names = fs.readdirSync(modelsDir(dataDir));
  } catch {
    return []; // nothing pulled yet
  }
  const out: PulledModel[] = [];
  for (const f of names.sort()) {
    if (!f.endsWith(".gguf")) continue;
    const m = findModel(dataDir, f.slice(0, -5));
    if (m) out.push(m);
  }
  return out;
}

/** The GGUF path of a pulled model, for anything that runs one (a deployment's replica). */
export function resolveModelPath(dataDir: string, name: string): string | undefined {
  return findModel(dataDir, name)?.path;
}

/** Records a model's sidecar (written to a temporary file and renamed, so it is never half written). */
export function writeSidecar(file: string, meta: { sha256: string; source: string; pulled_at: string }): void {
  const tmp = `${file}.json.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(meta)}\n`);
  fs.renameSync(tmp, `${file}.json`);
}

/** Deletes a model and its sidecar; false when there was no such model. */
export function removeModel(dataDir: string, name: string): boolean {
  const m = findModel(dataDir, name);
  if (!m) return false;
  fs.rmSync(m.path, { force: true });
  fs.rmSync(`${m.path}.json`, { force: true });
  return true;
}
