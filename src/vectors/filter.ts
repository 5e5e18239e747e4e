// Metadata filters: validates a filter in the familiar operator form ($eq $ne $gt $gte $lt $lte $in
// $nin $exists $and $or) once, and compiles it to a predicate that search calls per candidate.
import { invalid } from "../errors.js";

export type Metadata = Record<string, unknown>;
export type Predicate = (meta: Metadata | undefined) => boolean;
type Scalar = string | number | boolean;

/** Deepest nesting of $and/$or accepted (a filter is compiled recursively). */
export const MAX_FILTER_DEPTH = 8;
const MAX_IN = 10_000;

const FIELD_OPS = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"]);

function isScalar(v: unknown): v is Scalar {
  return typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A stored value matches a scalar when equal, or, for a list of values, when one of them is. */
function equals(stored: unknown, want: Scalar): boolean {
  if (Array.isArray(stored)) return stored.includes(want);
  return stored === want;
}

function compare(op: string, want: unknown, path: string): Predicate {
  if (typeof want !== "number" && typeof want !== "string")
    throw invalid(`filter: ${path}.${op} needs a number or a string, got ${JSON.stringify(want)}`);
  if (typeof want === "number" && !Number.isFinite(want)) throw invalid(`filter: ${path}.${op} must be finite`);
  const field = path;
  // Comparisons only hold between values of the same type (a string is never > a number).
  const test =
    op === "$gt"
      ? (v: number | string) => v > want
      : op === "$gte"
        ? (v: number | string) => v >= want
        : op === "$lt"
          ? (v: number | string) => v < want
          : (v: number | string) => v <= want;
  return (m) => {
    const v = m?.[field];
    return typeof v === typeof want && test(v as number | string);
  };
}

function fieldOp(field: string, op: string, arg: unknown): Predicate {
  const path = field;
  switch (op) {
    case "$eq":
    case "$ne": {
      if (!isScalar(arg)) throw invalid(`filter: ${path}.${op} needs a string, number or boolean`);
      if (op === "$eq") return (m) => equals(m?.[field], arg);
      return (m) => !equals(m?.[field], arg);
    }
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte":
      return compare(op, arg, path);
    case "$in":
    case "$nin": {
      if (!Array.isArray(arg) || arg.length > MAX_IN || !arg.every(isScalar))
        throw invalid(`filter: ${path}.${op} needs an array of at most ${MAX_IN} strings, numbers or booleans`);
      const set = new Set<unknown>(arg);
      const hit = (v: unknown) => (Array.isArray(v) ? v.some((x) => set.has(x)) : set.has(v));
      if (op === "$in") return (m) => hit(m?.[field]);
      return (m) => !hit(m?.[field]);
    }
    case "$exists": {
      if (typeof arg !== "boolean") throw invalid(`filter: ${path}.$exists needs true or false`);
      return (m) => (m !== undefined && m[field] !== undefined) === arg;
    }
    default:
      throw invalid(`filter: unknown operator '${op}' on field '${field}' (known: ${[...FIELD_OPS].join(" ")})`);
  }
}

function all(preds: Predicate[]): Predicate {
  if (preds.length === 1) return preds[0] as Predicate;
  return (m) => {
    for (const p of preds) if (!p(m)) return false;
    return true;
  };
}

function compileNode(node: unknown, depth: number): Predicate {
  if (!isObject(node)) throw invalid("filter: each condition must be an object");
  if (depth > MAX_FILTER_DEPTH) throw invalid(`filter: nested deeper than ${MAX_FILTER_DEPTH} levels of $and/$or`);
  const preds: Predicate[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === "$and" || key === "$or") {
      if (!Array.isArray(value) || value.length === 0) throw invalid(`filter: ${key} needs a non-empty array of conditions`);
      const parts = value.map((v) => compileNode(v, depth + 1));
      preds.push(
        key === "$and"
          ? all(parts)
          : (m) => {
              for (const p of parts) if (p(m)) return true;
              return false;
            },
      );
    } else if (key.startsWith("$")) {
      throw invalid(`filter: unknown operator '${key}' at the top of a condition (only $and and $or, or field names)`);
    } else if (isObject(value)) {
      const ops = Object.entries(value);
      if (ops.length === 0) throw invalid(`filter: field '${key}' has an empty condition`);
      preds.push(all(ops.map(([op, arg]) => fieldOp(key, op, arg))));
    } else if (isScalar(value)) {
      preds.push(fieldOp(key, "$eq", value));
    } else {
      throw invalid(`filter: field '${key}' needs a value or an operator object`);
    }
  }
  if (preds.length === 0) return () => true;
  return all(preds);
}

/** Validates and compiles a filter; an empty or absent filter is undefined (everything matches). */
export function compileFilter(filter: unknown): Predicate | undefined {
  if (filter === undefined || filter === null) return undefined;
  if (isObject(filter) && Object.keys(filter).length === 0) return undefined;
  return compileNode(filter, 1);
}
