// The operator's admin API (/v1/admin): API keys and tenant quotas. Snake_case on the wire.
import { Type } from "@sinclair/typebox";

/** Tenant ids: the same plain tokens request ids are (they appear in logs, cgroup names and URLs). */
const TenantId = Type.String({ pattern: "^[A-Za-z0-9._:-]{1,128}$", description: "Tenant id (letters, digits, . _ : -; up to 128)" });
const Count = (description: string, minimum = 1) => Type.Integer({ minimum, maximum: 2_147_483_647, description });
const Nullable = <T extends ReturnType<typeof Count>>(t: T) => Type.Union([t, Type.Null()]);
const Timestamp = Type.String({ format: "date-time" });

export const CreateKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128, pattern: "\\S", description: "What the key is for" }),
    tenant_id: Type.Optional(TenantId),
    rate_limit_per_minute: Type.Optional(Count("Requests per minute for this key (default: the service's)")),
    max_concurrent_runs: Type.Optional(Count("Executions at once for this key (default: the service's)")),
  },
  { additionalProperties: false },
);

const keyFields = {
  id: Type.String(),
  tenant_id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: "The key's first characters, to recognise it" }),
  created_at: Timestamp,
  revoked_at: Type.Union([Timestamp, Type.Null()]),
  rate_limit_per_minute: Type.Union([Type.Integer(), Type.Null()]),
  max_concurrent_runs: Type.Union([Type.Integer(), Type.Null()]),
};

export const CreatedKey = Type.Object(
  { key: Type.String({ description: "The API key: shown only in this answer" }), ...keyFields },
  { additionalProperties: false },
);

export const KeyInfo = Type.Object(
  {
    ...keyFields,
    last_used_at: Type.Union([Timestamp, Type.Null()], {
      description: "The key's last request; null if never used. Stored once a minute, so after a restart up to a minute old",
    }),
  },
  { additionalProperties: false },
);

export const KeyList = Type.Object({ keys: Type.Array(KeyInfo) }, { additionalProperties: false });

export const KeyListQuery = Type.Object({ tenant_id: Type.Optional(TenantId) });

export const KeyIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });

export const RevokedKey = Type.Object({ message: Type.String(), id: Type.String() }, { additionalProperties: false });

export const TenantIdParams = Type.Object({ id: TenantId });

const quotaDescriptions = {
  max_sandboxes: "Live sandboxes at once",
  max_concurrent_runs: "code/run and commands/run executing at once, over all the tenant's keys",
  memory_mb: "Memory of all the tenant's sandboxes together, MiB",
  max_processes: "Processes and threads of all the tenant's sandboxes together",
  storage_mb: "Bytes of the tenant's stored files and snapshots together, writes in flight included, MiB",
  max_vector_indexes: "Vector indexes at once",
  max_vectors: "Vectors in all the tenant's indexes together",
  vector_storage_mb: "Bytes of all the tenant's vectors together (embedding, metadata JSON and id of each), MiB",
} as const;

/** PUT body: each quota a number, null (back to the default) or absent (unchanged). */
export const PutTenantBody = Type.Object(
  {
    max_sandboxes: Type.Optional(Nullable(Count(quotaDescriptions.max_sandboxes, 0))),
    max_concurrent_runs: Type.Optional(Nullable(Count(quotaDescriptions.max_concurrent_runs, 0))),
    memory_mb: Type.Optional(Nullable(Count(quotaDescriptions.memory_mb, 64))),
    max_processes: Type.Optional(Nullable(Count(quotaDescriptions.max_processes, 16))),
    storage_mb: Type.Optional(Nullable(Count(quotaDescriptions.storage_mb, 1))),
    max_vector_indexes: Type.Optional(Nullable(Count(quotaDescriptions.max_vector_indexes, 0))),
    max_vectors: Type.Optional(Nullable(Count(quotaDescriptions.max_vectors, 0))),
    vector_storage_mb: Type.Optional(Nullable(Count(quotaDescriptions.vector_storage_mb, 0))),
  },
  { additionalProperties: false, minProperties: 1 },
);

const StoredQuotas = Type.Object(
  {
    max_sandboxes: Type.Union([Type.Integer(), Type.Null()]),
    max_concurrent_runs: Type.Union([Type.Integer(), Type.Null()]),
    memory_mb: Type.Union([Type.Integer(), Type.Null()]),
    max_processes: Type.Union([Type.Integer(), Type.Null()]),
    storage_mb: Type.Union([Type.Integer(), Type.Null()]),
    max_vector_indexes: Type.Union([Type.Integer(), Type.Null()]),
    max_vectors: Type.Union([Type.Integer(), Type.Null()]),
    vector_storage_mb: Type.Union([Type.Integer(), Type.Null()]),
  },
  { additionalProperties: false, description: "As set by the operator; null: the service's default" },
);

const EffectiveQuotas = Type.Object(
  {
    max_sandboxes: Type.Integer({ description: quotaDescriptions.max_sandboxes }),
    max_concurrent_runs: Type.Integer({ description: quotaDescriptions.max_concurrent_runs }),
    memory_mb: Type.Integer({ description: quotaDescriptions.memory_mb }),
    max_processes: Type.Integer({ description: quotaDescriptions.max_processes }),
    storage_mb: Type.Integer({ description: quotaDescriptions.storage_mb }),
    max_vector_indexes: Type.Integer({ description: quotaDescriptions.max_vector_indexes }),
    max_vectors: Type.Integer({ description: quotaDescriptions.max_vectors }),
    vector_storage_mb: Type.Integer({ description: quotaDescriptions.vector_storage_mb }),
  },
  { additionalProperties: false, description: "What applies: the set value, or the default where none is set" },
);

export const Tenant = Type.Object(
  {
    tenant_id: Type.String(),
    quotas: StoredQuotas,
    effective: EffectiveQuotas,
    active_keys: Type.Integer({ description: "API keys of this tenant that are not revoked" }),
    suspended_at: Type.Union([Timestamp, Type.Null()], {
      description: "When the operator suspended the tenant (its keys are refused with 403 tenant_suspended); null if active",
    }),
    created_at: Type.Union([Timestamp, Type.Null()], { description: "When quotas were first set; null if never" }),
    updated_at: Type.Union([Timestamp, Type.Null()]),
  },
  { additionalProperties: false },
);

export const TenantList = Type.Object({ tenants: Type.Array(Tenant) }, { additionalProperties: false });
