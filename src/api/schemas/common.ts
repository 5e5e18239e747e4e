// Schemas shared by every route: the error envelope, pagination, ids. TypeBox schemas are JSON
// Schema, so the same objects validate requests and generate the OpenAPI document.
import { type TSchema, Type } from "@sinclair/typebox";

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: "Stable machine-readable code, e.g. sandbox_not_found" }),
      message: Type.String({ description: "Human-readable explanation" }),
    }),
  },
  { $id: "ErrorEnvelope", description: "Every error response has this shape" },
);

/** Error responses to document on a route, by status. */
export function errors(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((s) => [s, Type.Ref(ErrorEnvelope)]));
}

export const SandboxIdParams = Type.Object({ sandbox_id: Type.String({ minLength: 1, maxLength: 128 }) });

export const Pagination = Type.Object({
  limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,6}$", description: "Page size (1..1000, default 100)" })),
  offset: Type.Optional(Type.String({ pattern: "^[0-9]{1,9}$", description: "Items to skip (default 0)" })),
});

export function page(q: { limit?: string; offset?: string }): { limit: number; offset: number } {
  const limit = Math.min(1000, Math.max(1, Number(q.limit ?? 100)));
  return { limit, offset: Number(q.offset ?? 0) };
}

export const StringMap = Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 32768 }), { maxProperties: 256 });
