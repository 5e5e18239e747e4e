// What each request costs the shared engines in a cluster, counted by the engines themselves:
// PostgreSQL statements from pg_stat_statements (the private server preloads it) and Redis
// commands from INFO commandstats. Each kind of request (create, code/run, kill) is sent through
// the API node in a batch; the counters are read before and after, and what the nodes do anyway in
// that time (heartbeats, the webhook poll), measured in an idle window first, is taken off.
import { Redis } from "ioredis";
import pg from "pg";

export interface Counts {
  statements: number;
  redisCommands: number;
}

/** Totals with their parts: statements by first word (INSERT, SELECT, BEGIN...), Redis commands by name. */
interface Reading extends Counts {
  parts: Map<string, number>;
}

export interface CostRow {
  name: string;
  n: number;
  /** Per request, background taken off. */
  statements: number;
  redisCommands: number;
  /** The largest parts per request (background not taken off), e.g. `pg INSERT 2.0, redis evalsha 1.0`. */
  parts: string;
}

/** Reads both engines' totals; the reading's own statements and commands are not counted. */
export class EngineCounters {
  private constructor(
    private readonly sql: pg.Client,
    private readonly redis: Redis,
  ) {}

  /** `databaseUrl` must be a database where `CREATE EXTENSION pg_stat_statements` may run. */
  static async open(databaseUrl: string, redisUrl: string): Promise<EngineCounters> {
    const sql = new pg.Client({ connectionString: databaseUrl });
    await sql.connect();
    await sql.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    return new EngineCounters(sql, new Redis(redisUrl));
  }

  async read(): Promise<Reading> {
    const { rows } = await this.sql.query<{ word: string; n: string }>(
      `SELECT upper(split_part(ltrim(query), ' ', 1)) AS word, sum(calls) AS n FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND query NOT LIKE '%pg_stat_statements%'
        GROUP BY 1`,
    );
    const parts = new Map<string, number>();
    let statements = 0;
    for (const r of rows) {
      statements += Number(r.n);
      parts.set(`pg ${r.word}`, Number(r.n));
    }
    const info = await this.redis.info("commandstats");
    let redisCommands = 0;
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (m[1] === "info" || m[1] === "ping") continue;
      redisCommands += Number(m[2]);
      parts.set(`redis ${m[1]}`, Number(m[2]));
    }
    return { statements, redisCommands, parts };
  }

  async close(): Promise<void> {
    await this.sql.end();
    this.redis.disconnect();
  }
}

/** What the nodes do per second with no request (heartbeats, lease sweeps, the webhook poll). */
export async function background(counters: EngineCounters, ms: number): Promise<Counts> {
  const before = await counters.read();
  await new Promise((r) => setTimeout(r, ms));
  const after = await counters.read();
  return {
    statements: ((after.statements - before.statements) / ms) * 1000,
    redisCommands: ((after.redisCommands - before.redisCommands) / ms) * 1000,
  };
}

/** Runs `n` requests one after the other and returns their cost each, less the background of that time. */
export async function costOf(
  name: string,
  n: number,
  counters: EngineCounters,
  idle: Counts,
  request: (i: number) => Promise<void>,
): Promise<CostRow> {
  const before = await counters.read();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await request(i);
  const seconds = (performance.now() - t0) / 1000;
  const after = await counters.read();
  const per = (d: number, bg: number) => Math.max(0, (d - bg * seconds) / n);
  const parts = [...after.parts]
    .map(([part, total]) => [part, (total - (before.parts.get(part) ?? 0)) / n] as const)
    .filter(([, each]) => each >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([part, each]) => `${part} ${each.toFixed(1)}`)
    .join(", ");
  return {
    name,
    n,
    statements: per(after.statements - before.statements, idle.statements),
    redisCommands: per(after.redisCommands - before.redisCommands, idle.redisCommands),
    parts,
  };
}

export function printCosts(rows: CostRow[], idle: Counts, nodes: number): string {
  const lines = [
    "### Cost per request through an API node (PostgreSQL statements: pg_stat_statements; Redis commands: INFO commandstats)",
    "",
    "| request | n | PostgreSQL statements | Redis commands | of which (per request, background included) |",
    "| --- | ---: | ---: | ---: | --- |",
    ...rows.map((r) => `| ${r.name} | ${r.n} | ${r.statements.toFixed(1)} | ${r.redisCommands.toFixed(1)} | ${r.parts} |`),
    `| background, per node per second (${nodes} nodes idle) | | ${(idle.statements / nodes).toFixed(2)} | ${(idle.redisCommands / nodes).toFixed(2)} | |`,
  ];
  const text = lines.join("\n");
  process.stdout.write(`${text}\n\n`);
  return text;
}
