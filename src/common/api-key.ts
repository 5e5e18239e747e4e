// The record of an API key: kept by the tenancy area (src/tenancy/), attached to every
// authenticated request by the HTTP kernel (src/api/auth.ts), read by the areas' routes.
export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  name: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
  rateLimitPerMinute: number | null;
  maxConcurrentRuns: number | null;
  /** The last request with the key; kept in memory, written to the database at most once a minute. */
  lastUsedAt: string | null;
}
