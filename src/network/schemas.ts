// Schemas of a sandbox's network: egress policy, egress log, port URLs and share links.
import { Type } from "@sinclair/typebox";
import { MAX_RULES } from "./policy.js";

const Entries = (what: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 260 }), {
    maxItems: MAX_RULES,
    description: `${what}: domain names (pypi.org, *.github.com for any subdomain), IP addresses or CIDRs (10.0.0.0/8, 2001:db8::/32)`,
  });

/** The create body's `network` field. */
export const NetworkRules = Type.Object(
  {
    allow_out: Type.Optional(Entries("Reachable destinations; when set, only these")),
    deny_out: Type.Optional(Entries("Refused destinations (deny wins)")),
  },
  { additionalProperties: false },
);

export const NetworkPolicyBody = Type.Object(
  {
    internet_access: Type.Optional(Type.Boolean({ description: "Reach any public address (minus deny_out) when allow_out is empty" })),
    allow_out: Type.Optional(Entries("Reachable destinations; when set, only these")),
    deny_out: Type.Optional(Entries("Refused destinations (deny wins)")),
  },
  { additionalProperties: false },
);

export const NetworkPolicyJson = Type.Object(
  { internet_access: Type.Boolean(), allow_out: Type.Array(Type.String()), deny_out: Type.Array(Type.String()) },
  { additionalProperties: false },
);

export const EgressLogQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,5}$", description: "Newest entries to return (default 100)" })),
});

export const EgressLog = Type.Object(
  {
    entries: Type.Array(
      Type.Object(
        {
          time: Type.String({ format: "date-time" }),
          host: Type.String(),
          port: Type.Integer(),
          address: Type.Union([Type.String(), Type.Null()]),
          allowed: Type.Boolean(),
          reason: Type.String(),
          bytes_out: Type.Integer({ description: "Bytes from the sandbox out" }),
          bytes_in: Type.Integer({ description: "Bytes from the destination in" }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const PortParams = Type.Object({
  sandbox_id: Type.String({ minLength: 1, maxLength: 128 }),
  port: Type.String({ pattern: "^[0-9]{1,5}$" }),
});

export const HostUrl = Type.Object({ url: Type.String() }, { additionalProperties: false });

export const ShareBody = Type.Object(
  { expires_in: Type.Integer({ minimum: 1, description: "Seconds the link works (at most the operator's AGENTBOX_SHARE_MAX_S)" }) },
  { additionalProperties: false },
);

export const ShareResponse = Type.Object(
  { url: Type.String(), expires_at: Type.String({ format: "date-time" }) },
  { additionalProperties: false },
);
