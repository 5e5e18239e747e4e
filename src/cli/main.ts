#!/usr/bin/env node
// The agentbox CLI. Everyday commands (sandbox, run, exec, cp, shell, usage) call the API with an API
// key through the TypeScript SDK (agent-commands.ts); `models` manages pulled models (models.ts).
// Operator commands: `keys` and `tenants` talk to a running service's admin API over HTTP (--url, the
// admin key from AGENTBOX_ADMIN_KEY or --admin-key); `keys bootstrap` and `admin rotate-key` work on
// the service's machine directly on its database, for first setup and a lost admin key.
import path from "node:path";
import { parseArgs } from "node:util";
import { AdminClient, type KeyJson, type TenantJson } from "./admin-client.js";
import { AGENT_AREAS, AGENT_USAGE, agentCommand } from "./agent-commands.js";
import { MODELS_USAGE, modelsCommand } from "./models.js";
import { TEMPLATE_USAGE, templateCommand } from "./template-commands.js";

const USAGE = `usage:
${AGENT_USAGE}
${TEMPLATE_USAGE}
  agentbox keys create --name NAME [--tenant TENANT_ID] [--rate-limit PER_MINUTE] [--max-concurrent N] [--json]
  agentbox keys list [--tenant TENANT_ID] [--json]
  agentbox keys revoke ID_OR_PREFIX      the key's id, its key prefix, or a unique beginning of either
  agentbox tenants list [--json]
  agentbox tenants get TENANT_ID [--json]
  agentbox tenants set TENANT_ID [--max-sandboxes N] [--max-concurrent-runs N] [--memory-mb N]
                                 [--max-processes N] [--storage-mb N] [--max-vector-indexes N]
                                 [--max-vectors N] [--vector-storage-mb N] [--json]     (N or "default")
  agentbox tenants suspend TENANT_ID    refuse its keys, end what they hold open, pause its sandboxes
  agentbox tenants resume TENANT_ID     let its keys in again (it resumes its sandboxes itself)
    these talk to the service: --url URL (or AGENTBOX_URL; default http://127.0.0.1:8080) and
    the admin key in AGENTBOX_ADMIN_KEY (or --admin-key KEY, visible to other local users)
  agentbox keys bootstrap --name NAME [--tenant TENANT_ID] [--rate-limit N] [--max-concurrent N] [--json]
  agentbox admin rotate-key
    these work on this machine's database directly (AGENTBOX_DATA_DIR), service running or not
${MODELS_USAGE}
  agentbox help | --help | -h
relative paths are the caller's: under \`npm run cli\`, the directory it was run from (INIT_CWD)`;

/** A usage error: exit status 2. */
class UsageError extends Error {}

const QUOTA_FLAGS = {
  "max-sandboxes": "max_sandboxes",
  "max-concurrent-runs": "max_concurrent_runs",
  "memory-mb": "memory_mb",
  "max-processes": "max_processes",
  "storage-mb": "storage_mb",
  "max-vector-indexes": "max_vector_indexes",
  "max-vectors": "max_vectors",
  "vector-storage-mb": "vector_storage_mb",
} as const;

function positiveInt(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer`);
  return n;
}

function quotaValue(v: string, flag: string): number | null {
  if (v === "default") return null;
  const n = Number(v);
  if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(n)) throw new Error(`--${flag} must be a non-negative integer or "default"`);
  return n;
}

const out = (text: string) => process.stdout.write(text);

function printCreated(created: KeyJson & { key: string }, json: boolean | undefined): void {
  if (json) out(`${JSON.stringify(created)}\n`);
  else out(`API key (shown once, store it now):\n${created.key}\n\nid: ${created.id}\ntenant: ${created.tenant_id}\n`);
}

function printTenant(t: TenantJson): void {
  out(`tenant ${t.tenant_id}  (${t.active_keys} active keys)${t.suspended_at ? `  SUSPENDED since ${t.suspended_at}` : ""}\n`);
  for (const [name, value] of Object.entries(t.effective)) {
    const set = t.quotas[name as keyof TenantJson["quotas"]];
    out(`  ${name.padEnd(20)} ${String(value).padStart(10)}  ${set === null ? "(default)" : "(set)"}\n`);
  }
}

/** Characters a beginning of an id or key prefix needs before `keys revoke` takes it. */
const MIN_PREFIX = 4;

/**
 * The active key `target` names: its id or key prefix exactly, else the one key whose id or key
 * prefix starts with it. Several such keys: an Error listing them. None: undefined.
 */
function findKey(keys: KeyJson[], target: string): KeyJson | undefined {
  const t = target.replace(/…$/, ""); // as `keys list` prints a prefix
  const active = keys.filter((k) => k.revoked_at === null);
  const exact = active.filter((k) => k.id === t || k.prefix === t);
  const hits = exact.length > 0 || t.length < MIN_PREFIX ? exact : active.filter((k) => k.id.startsWith(t) || k.prefix.startsWith(t));
  if (hits.length > 1) {
    const list = hits.map((k) => `${k.id} (${k.name}, ${k.prefix}…)`).join(", ");
    throw new Error(`'${target}' matches ${hits.length} active keys: ${list}; give more of the id, nothing was revoked`);
  }
  return hits[0];
}

/** Whether the arguments ask for help (before a `--`, after which they are a command's own). */
function wantsHelp(argv: string[]): boolean {
  const own = argv.includes("--") ? argv.slice(0, argv.indexOf("--")) : argv;
  return argv[0] === "help" || own.includes("--help") || own.includes("-h");
}

async function main(argv: string[]): Promise<number> {
  if (wantsHelp(argv)) {
    out(`${USAGE}\n`);
    return 0;
  }
  if (AGENT_AREAS.has(argv[0] ?? "")) return agentCommand(argv, (msg) => new UsageError(msg));
  if (argv[0] === "template") return templateCommand(argv, (msg) => new UsageError(msg));
  if (argv[0] === "models") return modelsCommand(argv.slice(1), (msg) => new UsageError(msg));
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      tenant: { type: "string" },
      "rate-limit": { type: "string" },
      "max-concurrent": { type: "string" },
      url: { type: "string" },
      "admin-key": { type: "string" },
      json: { type: "boolean" },
      ...Object.fromEntries(Object.keys(QUOTA_FLAGS).map((f) => [f, { type: "string" as const }])),
    },
  });
  const [area, action, arg] = positionals;
  const command = `${area ?? ""} ${action ?? ""}`;
  const newKey = () => {
    if (!values.name) throw new UsageError(`${command} needs --name NAME`);
    return {
      name: values.name,
      tenantId: values.tenant,
      rateLimitPerMinute: positiveInt(values["rate-limit"], "--rate-limit"),
      maxConcurrentRuns: positiveInt(values["max-concurrent"], "--max-concurrent"),
    };
  };

  // Local commands: straight on the service's database (this machine's SQLite file, or the
  // PostgreSQL database of AGENTBOX_DATABASE_URL).
  // Imported here, not at the top: the settings, the databases and the key stores take a good part
  // of a second to load, which every other command (they go over HTTP) would pay for nothing.
  if (command === "keys bootstrap" || command === "admin rotate-key") {
    const [{ loadConfig }, { openDb }, { closePersistence, openPersistence }, { AdminKeys, KeyDirectory }, { openKeyStores }] =
      await Promise.all([
        import("../config.js"),
        import("../store/db.js"),
        import("../store/persistence.js"),
        import("../tenancy/key-directory.js"),
        import("../tenancy/setup.js"),
      ]);
    const config = loadConfig();
    const db = openDb(config.dataDir, config.databaseFile);
    const persistence = openPersistence(config, db);
    try {
      const stores = await openKeyStores(persistence);
      if (command === "admin rotate-key") {
        const key = await new AdminKeys(stores.admin).rotate();
        out(`Admin key (shown once, store it now; the previous one no longer works):\n${key}\n`);
        if (process.env.AGENTBOX_ADMIN_KEY) out("note: a service started with AGENTBOX_ADMIN_KEY uses that key instead\n");
        return 0;
      }
      const keys = new KeyDirectory(stores.keys);
      const { key, record } = await keys.create(newKey());
      await keys.close();
      printCreated(
        {
          key,
          id: record.id,
          tenant_id: record.tenantId,
          name: record.name,
          prefix: record.prefix,
          created_at: record.createdAt,
          revoked_at: record.revokedAt,
          rate_limit_per_minute: record.rateLimitPerMinute,
          max_concurrent_runs: record.maxConcurrentRuns,
        },
        values.json,
      );
      return 0;
    } finally {
      await closePersistence(persistence);
      db.close();
    }
  }

  if ((area !== "keys" && area !== "tenants") || !action) throw new UsageError("");
  const adminKey = values["admin-key"] ?? process.env.AGENTBOX_ADMIN_KEY;
  const known = [
    "keys create",
    "keys list",
    "keys revoke",
    "tenants list",
    "tenants get",
    "tenants set",
    "tenants suspend",
    "tenants resume",
  ];
  if (!known.includes(command)) throw new UsageError("");
  if (command === "keys revoke" && !arg) throw new UsageError("keys revoke needs an id or key prefix");
  if (command.startsWith("tenants ") && command !== "tenants list" && !arg) throw new UsageError(`${command} needs a TENANT_ID`);
  const input = command === "keys create" ? newKey() : undefined;
  if (!adminKey) throw new UsageError("set AGENTBOX_ADMIN_KEY (or pass --admin-key) to the service's admin key");
  const api = new AdminClient(values.url ?? process.env.AGENTBOX_URL ?? "http://127.0.0.1:8080", adminKey);

  switch (command) {
    case "keys create": {
      const i = input as NonNullable<typeof input>;
      const body: Record<string, unknown> = { name: i.name };
      if (i.tenantId !== undefined) body.tenant_id = i.tenantId;
      if (i.rateLimitPerMinute !== undefined) body.rate_limit_per_minute = i.rateLimitPerMinute;
      if (i.maxConcurrentRuns !== undefined) body.max_concurrent_runs = i.maxConcurrentRuns;
      printCreated(await api.createKey(body), values.json);
      return 0;
    }
    case "keys list": {
      const rows = await api.listKeys(values.tenant);
      if (values.json) out(`${JSON.stringify(rows)}\n`);
      else
        for (const r of rows)
          out(
            `${r.id}  ${r.prefix}…  ${r.name}  tenant=${r.tenant_id}  ${r.revoked_at ? `revoked ${r.revoked_at}` : "active"}` +
              `  last used ${r.last_used_at ?? "never"}\n`,
          );
      return 0;
    }
    case "keys revoke": {
      const target = arg as string;
      const id = findKey(await api.listKeys(), target)?.id ?? target;
      if (!(await api.revokeKey(id))) {
        process.stderr.write(`no active key matches '${target}'\n`);
        return 1;
      }
      out(`revoked ${target}\n`);
      return 0;
    }
    case "tenants list": {
      const tenants = await api.listTenants();
      if (values.json) out(`${JSON.stringify(tenants)}\n`);
      else for (const t of tenants) printTenant(t);
      return 0;
    }
    case "tenants get":
    case "tenants set": {
      let tenant: TenantJson;
      if (command === "tenants set") {
        const body: Record<string, number | null> = {};
        for (const [flag, field] of Object.entries(QUOTA_FLAGS)) {
          const v = (values as Record<string, string | boolean | undefined>)[flag];
          if (typeof v === "string") body[field] = quotaValue(v, flag);
        }
        if (Object.keys(body).length === 0) throw new UsageError("tenants set needs at least one quota flag");
        tenant = await api.setTenant(arg as string, body);
      } else tenant = await api.getTenant(arg as string);
      if (values.json) out(`${JSON.stringify(tenant)}\n`);
      else printTenant(tenant);
      return 0;
    }
    case "tenants suspend":
    case "tenants resume": {
      const tenant = await api.suspendTenant(arg as string, command === "tenants suspend");
      if (values.json) out(`${JSON.stringify(tenant)}\n`);
      else printTenant(tenant);
      return 0;
    }
    default:
      throw new UsageError("");
  }
}

// `npm run cli` runs in the package's directory; paths the caller gives are relative to where they
// typed it (INIT_CWD). The data dir setting keeps meaning what it means to `npm start`, run from here.
if (process.env.INIT_CWD) {
  const dataDir = process.env.AGENTBOX_DATA_DIR;
  if (dataDir && !path.isAbsolute(dataDir)) process.env.AGENTBOX_DATA_DIR = path.resolve(dataDir);
  process.chdir(process.env.INIT_CWD);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message ? `${err.message}\n` : ""}${USAGE}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
