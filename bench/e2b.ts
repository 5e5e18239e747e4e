// The E2B-compatible API against the native one, in the same run on the same service: sandbox
// create, and a warm runCode('1') (python), through E2B's own SDK (@e2b/code-interpreter, env
// vars only) and through the native routes (keep-alive client), one of each in turn so both see
// the same machine. Prints the machine's own speed first and the facade's cost (SDK minus native)
// at p50 and p99 after the table.
import { Sandbox } from "@e2b/code-interpreter";
import { startServer } from "../test/helpers/server.js";
import { machineLine } from "./code-run.js";
import { added, keepAliveClient, printTable, type Row, sleep, timed, published } from "./lib.js";

const RUNS = Number(process.env.BENCH_E2B_RUNS ?? 100);
const CREATES = Number(process.env.BENCH_E2B_CREATES ?? 15);

export async function benchE2b(): Promise<string> {
  const machine = await machineLine();
  process.stdout.write(`${machine}\n`);
  const server = await startServer({ env: { AGENTBOX_WARM_POOL: "4", AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000" } });
  try {
    process.env.E2B_API_URL = `${server.url}/e2b`;
    process.env.E2B_SANDBOX_URL = `${server.url}/e2b`;
    process.env.E2B_API_KEY = server.key;
    const call = keepAliveClient(server);
    const native: number[] = [];
    const viaSdk: number[] = [];
    const ids: string[] = [];
    await sleep(1500);
    for (let i = 0; i < CREATES; i++) {
      const [a, res] = await timed(() => call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {}));
      if (res.status !== 201) throw new Error(`create failed: ${JSON.stringify(res.body)}`);
      native.push(a);
      ids.push(res.body.sandbox_id);
      await sleep(150);
      const [b, sbx] = await timed(() => Sandbox.create());
      viaSdk.push(b);
      ids.push(sbx.sandboxId);
      await sleep(150);
    }
    const id = ids[0] as string;
    const sbx = await Sandbox.connect(ids[1] as string);
    const body = JSON.stringify({ code: "1", language: "python" });
    const runNative: number[] = [];
    const runSdk: number[] = [];
    for (let i = 0; i < 10; i++) {
      await call("POST", `/v1/agents/sandboxes/${id}/code/run`, body);
      await sbx.runCode("1");
    }
    for (let i = 0; i < RUNS; i++) {
      runNative.push((await timed(() => call("POST", `/v1/agents/sandboxes/${id}/code/run`, body)))[0]);
      const [ms, exec] = await timed(() => sbx.runCode("1"));
      if (exec.text !== "1") throw new Error(`runCode answered ${JSON.stringify(exec.toJSON())}`);
      runSdk.push(ms);
    }
    for (const sid of ids) await call("DELETE", `/v1/agents/sandboxes/${sid}`);
    const rows: Row[] = [
      { name: "create: POST /v1/agents/sandboxes", samples: native },
      { name: "create: Sandbox.create() (E2B SDK)", samples: viaSdk },
      { name: "warm run '1': POST .../code/run", samples: runNative },
      { name: "warm run '1': sbx.runCode() (E2B SDK)", samples: runSdk },
    ];
    const table = printTable("E2B SDK vs the native API (same service, same run)", rows);
    const cost = (a: number[], b: number[]) => `${added(a, b, 50).toFixed(2)} ms p50, ${added(a, b, 99).toFixed(2)} ms p99`;
    const summary = `facade cost (SDK minus native): create ${cost(native, viaSdk)}; warm run ${cost(runNative, runSdk)}`;
    process.stdout.write(`${summary}\n\n`);
    return await published("e2b", `${table}\n\n${summary}`, machine);
  } finally {
    await server.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchE2b();
