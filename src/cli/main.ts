// Operator CLI: manage API keys in the service's database (`npm run cli -- keys create --name NAME`).
import { parseArgs } from "node:util";
import { loadConfig } from "../config.js";
import { openDb } from "../store/db.js";
import { SqliteKeyStore } from "../store/keys.js";

const USAGE = `usage:
  agentbox keys create --name NAME [--tenant TENANT_ID] [--rate-limit PER_MINUTE] [--max-concurrent N]
  agentbox keys list
  agentbox keys revoke ID_OR_PREFIX`;

function main(argv: string[]): number {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      tenant: { type: "string" },
      "rate-limit": { type: "string" },
      "max-concurrent": { type: "string" },
      json: { type: "boolean" },
    },
  });
  const [area, action, arg] = positionals;
  if (area !== "keys" || !action) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = loadConfig();
  const keys = new SqliteKeyStore(openDb(config.dataDir));
  const optionalInt = (v: string | undefined, flag: string) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer`);
    return n;
  };
  switch (action) {
    case "create": {
      if (!values.name) {
        process.stderr.write("keys create needs --name NAME\n");
        return 2;
      }
      const { key, record } = keys.create({
        name: values.name,
        tenantId: values.tenant,
        rateLimitPerMinute: optionalInt(values["rate-limit"], "--rate-limit"),
        maxConcurrentRuns: optionalInt(values["max-concurrent"], "--max-concurrent"),
      });
      if (values.json) process.stdout.write(`${JSON.stringify({ key, ...record })}\n`);
      else process.stdout.write(`API key (shown once, store it now):\n${key}\n\nid: ${record.id}\ntenant: ${record.tenantId}\n`);
      return 0;
    }
    case "list": {
      const rows = keys.list();
      if (values.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
      else
        for (const r of rows)
          process.stdout.write(
            `${r.id}  ${r.prefix}…  ${r.name}  tenant=${r.tenantId}  ${r.revokedAt ? `revoked ${r.revokedAt}` : "active"}\n`,
          );
      return 0;
    }
    case "revoke": {
      if (!arg) {
        process.stderr.write("keys revoke needs an id or key prefix\n");
        return 2;
      }
      if (!keys.revoke(arg)) {
        process.stderr.write(`no active key matches '${arg}'\n`);
        return 1;
      }
      process.stdout.write(`revoked ${arg}\n`);
      return 0;
    }
    default:
      process.stderr.write(`${USAGE}\n`);
      return 2;
  }
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
