// The settings kernel: every AGENTBOX_* variable is declared once as a TypeBox schema carrying its
// variable name, default, bounds and documentation, and read by one parser with one set of rules.
// Areas declare their own schemas (src/<area>/settings.ts); this file knows none of them.
import fs from "node:fs";
import os from "node:os";
import { type Static, type TObject, type TProperties, type TSchema, Type } from "@sinclair/typebox";
import { openFileLimit } from "../fd-limit.js";

/** What a default may be derived from: the machine the service starts on. */
export interface Machine {
  cores: number;
  /** Total RAM, MiB (not rounded). */
  memoryMb: number;
  /** The soft open-file limit of the process. */
  openFiles: number;
  /** The host's process table (the smaller of pid_max and threads-max). */
  processTable: number;
}

/** A default: a value, or one derived from the machine and other settings of the same schema (`get(key)`). */
export type Default<T> = T | ((machine: Machine, get: (key: string) => unknown) => T);

export type SettingKind = "integer" | "number" | "boolean" | "string" | "list" | "enum" | "url" | "custom";

/** What the kernel keeps on each setting's schema (under the `setting` key). */
export interface SettingMeta {
  env: string;
  kind: SettingKind;
  /** The area (or "server") that owns it: the settings table's grouping. */
  area: string;
  /** One line: what it does and what a client sees past it (the docs table's last column). */
  doc: string;
  default?: Default<unknown>;
  /** The default as the docs show it when it is derived or unset (else the value, in backticks). */
  defaultDoc?: string;
  /** Which docs table the row goes in (see scripts/settings-docs.ts); unset: the area's name. */
  table?: string;
  minimum?: number;
  maximum?: number;
  /** A value below this is raised to it (no error): for settings where a 0 has always meant "the least". */
  atLeast?: number;
  values?: readonly string[];
  /** An empty value is a value (e.g. no key prefix), not "unset". */
  allowEmpty?: boolean;
  parse?: (raw: string) => unknown;
}

interface Base<T> {
  doc: string;
  default?: Default<T>;
  defaultDoc?: string;
  table?: string;
}

interface Bounds {
  minimum?: number;
  maximum?: number;
  atLeast?: number;
}

type WithArea = { area: string };

function schema<S extends TSchema>(s: S, env: string, kind: SettingKind, o: Base<unknown> & Bounds & WithArea & Partial<SettingMeta>): S {
  const meta: SettingMeta = { ...o, env, kind };
  return Object.assign(s, { setting: meta, description: o.doc });
}

/** The bounds as JSON Schema keywords on the TypeBox schema itself. */
function bounds(o: Bounds): { minimum: number; maximum?: number } {
  return o.maximum === undefined ? { minimum: o.minimum ?? 0 } : { minimum: o.minimum ?? 0, maximum: o.maximum };
}

/** The declarations of one area's settings; `area` is written on every setting it makes. */
export function settingsOf(area: string) {
  return {
    /** A whole number within [minimum, maximum] (minimum 0 unless given). */
    integer: (env: string, o: Base<number> & Bounds & { default: Default<number> }) =>
      schema(Type.Integer(bounds(o)), env, "integer", { minimum: 0, ...o, area }),
    /** A number (fractions allowed) within [minimum, maximum] (minimum 0 unless given). */
    number: (env: string, o: Base<number> & Bounds & { default: Default<number> }) =>
      schema(Type.Number(bounds(o)), env, "number", { minimum: 0, ...o, area }),
    /** 1/true/yes/on or 0/false/no/off (any case). */
    boolean: (env: string, o: Base<boolean> & { default: boolean }) => schema(Type.Boolean(), env, "boolean", { ...o, area }),
    /** Text as given; with a default it is never undefined. */
    string: <D extends string | undefined = undefined>(env: string, o: Base<string> & { default?: D; allowEmpty?: boolean }) =>
      schema(Type.Unsafe<D extends string ? string : string | undefined>(Type.String()), env, "string", { ...o, area }),
    /** Comma-separated entries, trimmed, empty ones dropped; unset: none. */
    list: (env: string, o: Base<string[]>) => schema(Type.Array(Type.String()), env, "list", { default: [], ...o, area }),
    /** One of `values`. */
    enum: <const V extends string>(env: string, values: readonly V[], o: Base<NoInfer<V>> & { default: NoInfer<V> }) =>
      schema(Type.Unsafe<V>(Type.Union(values.map((v) => Type.Literal(v)))), env, "enum", { ...o, values, area }),
    /** An http(s) URL, its trailing slashes dropped; unset: undefined. */
    url: (env: string, o: Base<string>) =>
      schema(Type.Unsafe<string | undefined>(Type.String({ format: "uri" })), env, "url", { ...o, area }),
    /** A value `parse` makes of the text (it throws with the reason); unset or empty: `parse` is not called. */
    custom: <T>(env: string, o: Base<T> & { default: Default<T>; parse: (raw: string) => T }) =>
      schema(Type.Unsafe<T>({}), env, "custom", { ...o, area }),
  };
}

/** The kernel's metadata of a schema made by settingsOf(), or undefined for any other schema. */
export function settingMeta(s: TSchema): SettingMeta | undefined {
  return (s as { setting?: SettingMeta }).setting;
}

/** An area's settings schema: an object of settings (its docs rows keep this order). */
export function defineSettings<P extends TProperties>(properties: P): TObject<P> {
  for (const [key, s] of Object.entries(properties)) if (!settingMeta(s)) throw new Error(`setting ${key} was not made by settingsOf()`);
  return Type.Object(properties);
}

export type Settings<S extends TObject> = Static<S>;

/** The host's process table size (the smaller of pid_max and threads-max): every thread takes a pid. */
function hostPids(): number {
  const read = (file: string) => {
    try {
      return Number(fs.readFileSync(file, "utf8").trim()) || Number.POSITIVE_INFINITY;
    } catch {
      return Number.POSITIVE_INFINITY;
    }
  };
  const n = Math.min(read("/proc/sys/kernel/pid_max"), read("/proc/sys/kernel/threads-max"));
  return Number.isFinite(n) ? n : 32768;
}

/** The machine this process runs on. */
export function thisMachine(): Machine {
  return { cores: os.availableParallelism(), memoryMb: os.totalmem() / 2 ** 20, openFiles: openFileLimit(), processTable: hostPids() };
}

const TRUE = ["1", "true", "yes", "on"];
const FALSE = ["0", "false", "no", "off"];

function range(m: SettingMeta, what: string): string {
  if (m.maximum !== undefined) return `${what} from ${m.minimum ?? "-∞"} to ${m.maximum}`;
  if (m.minimum === 0) return `a non-negative ${what.replace(/^an? /, "")}`;
  return `${what} >= ${m.minimum}`;
}

function numeric(m: SettingMeta, raw: string, integer: boolean): number {
  const n = Number(raw.trim());
  const ok =
    raw.trim() !== "" &&
    (integer ? Number.isInteger(n) : Number.isFinite(n)) &&
    (m.minimum === undefined || n >= m.minimum) &&
    (m.maximum === undefined || n <= m.maximum);
  if (!ok) throw new Error(`${m.env} must be ${range(m, integer ? "an integer" : "a number")}, got '${raw}'`);
  return m.atLeast === undefined ? n : Math.max(m.atLeast, n);
}

/** Parses one variable's text by its setting's rules; throws an Error naming the variable. */
export function parseSetting(m: SettingMeta, raw: string): unknown {
  switch (m.kind) {
    case "integer":
      return numeric(m, raw, true);
    case "number":
      return numeric(m, raw, false);
    case "boolean": {
      const v = raw.trim().toLowerCase();
      if (TRUE.includes(v)) return true;
      if (FALSE.includes(v)) return false;
      throw new Error(`${m.env} must be true or false (1/0, yes/no, on/off), got '${raw}'`);
    }
    case "string":
      return raw;
    case "list":
      return raw
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
    case "enum":
      if (!m.values?.includes(raw)) throw new Error(`${m.env} must be ${m.values?.map((v) => `'${v}'`).join(" or ")}, got '${raw}'`);
      return raw;
    case "url": {
      let url: URL | undefined;
      try {
        url = new URL(raw);
      } catch {}
      if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
        throw new Error(`${m.env} must be an http:// or https:// URL, got '${raw}'`);
      return raw.replace(/\/+$/, "");
    }
    case "custom":
      try {
        return m.parse?.(raw);
      } catch (err) {
        const message = (err as Error).message;
        throw new Error(message.startsWith(m.env) ? message : `${m.env}: ${message}`);
      }
  }
}

/**
 * Reads a settings schema from the environment: each variable unset or empty (unless the setting
 * allows empty) takes its default, any other value is parsed by its setting's rules (a bad one: an
 * Error naming the variable). `machine` is measured only when a default needs it.
 */
export function readSettings<P extends TProperties>(
  schema: TObject<P>,
  env: NodeJS.ProcessEnv = process.env,
  machine: Machine | (() => Machine) = thisMachine,
): Static<TObject<P>> {
  let facts: Machine | undefined = typeof machine === "function" ? undefined : machine;
  const measure = () => {
    facts ??= (machine as () => Machine)();
    return facts;
  };
  const out: Record<string, unknown> = {};
  const reading = new Set<string>();
  // A derived default may name other settings of the schema (get), in any order: each is read once.
  const get = (key: string): unknown => {
    if (key in out) return out[key];
    const s = schema.properties[key];
    if (!s) throw new Error(`no setting '${key}' in this schema`);
    if (reading.has(key)) throw new Error(`the default of setting '${key}' depends on itself`);
    reading.add(key);
    const m = settingMeta(s) as SettingMeta;
    const raw = env[m.env];
    const d = m.default;
    if (raw !== undefined && (raw !== "" || m.allowEmpty)) out[key] = parseSetting(m, raw);
    // A copy of a plain default: a default list or object is never shared between two reads.
    else out[key] = typeof d === "function" ? (d as DeriveFn)(measure(), get) : structuredClone(d);
    return out[key];
  };
  for (const key of Object.keys(schema.properties)) get(key);
  return out as Static<TObject<P>>;
}

type DeriveFn = (machine: Machine, get: (key: string) => unknown) => unknown;

/** Every setting of a schema with its metadata, in declaration order (for the docs table). */
export function settingsList(schema: TObject): SettingMeta[] {
  return Object.values(schema.properties).map((s) => settingMeta(s) as SettingMeta);
}
