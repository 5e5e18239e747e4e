// Lifecycle event and webhook schemas.
import { Type } from "@sinclair/typebox";
import { EVENT_TYPES } from "./bus.js";
import { MAX_URL_LENGTH } from "./destination.js";
import { MAX_SECRET } from "./webhooks.js";

const EventTypeName = Type.Union(
  EVENT_TYPES.map((t) => Type.Literal(t)),
  { description: EVENT_TYPES.join(", ") },
);

export const SandboxEvent = Type.Object(
  {
    type: EventTypeName,
    at: Type.String({ format: "date-time" }),
    reason: Type.Union([Type.String(), Type.Null()], {
      description: "For `ended`: killed, timed_out, oom, error, host_restart or node_lost (its node left a cluster); null for other events",
    }),
    detail: Type.Record(Type.String(), Type.Unknown(), { description: "Context, e.g. `by` (api or operator) of a kill" }),
  },
  { additionalProperties: false },
);

export const SandboxEventList = Type.Array(SandboxEvent);

export const WebhookIdParams = Type.Object({ webhook_id: Type.String({ minLength: 1, maxLength: 128 }) });

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: "http(s) URL that receives the events" }),
    // Names are checked by the service, which can say which one is unknown.
    events: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
      minItems: 1,
      maxItems: 16,
      description: `Events to deliver: ${EVENT_TYPES.join(", ")}`,
    }),
    secret: Type.Optional(
      Type.String({
        maxLength: MAX_SECRET,
        description: "HMAC key of the signature (16..256 characters); generated and returned once if left out",
      }),
    ),
  },
  { additionalProperties: false },
);

export const WebhookJson = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    events: Type.Array(EventTypeName),
    created_at: Type.String({ format: "date-time" }),
    secret: Type.Optional(Type.String({ description: "Only in the create response, and only when the service generated it" })),
  },
  { additionalProperties: false },
);

export const WebhookList = Type.Object({ webhooks: Type.Array(WebhookJson) }, { additionalProperties: false });

export const DeleteWebhookResponse = Type.Object({ message: Type.String(), id: Type.String() }, { additionalProperties: false });

const AttemptJson = Type.Object(
  {
    at: Type.String({ format: "date-time" }),
    status_code: Type.Union([Type.Integer(), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()]),
    duration_ms: Type.Integer(),
  },
  { additionalProperties: false },
);

export const DeliveryList = Type.Object(
  {
    deliveries: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          event: EventTypeName,
          status: Type.Union([Type.Literal("pending"), Type.Literal("delivered"), Type.Literal("failed")]),
          attempts: Type.Integer(),
          created_at: Type.String({ format: "date-time" }),
          next_attempt_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
          attempt_log: Type.Array(AttemptJson),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const DeliveriesQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,4}$", description: "Newest deliveries to show (1..500, default 100)" })),
});
