// End to end: the data stack in every python sandbox. Each package of the list imports in a new
// sandbox; matplotlib is non-interactive and uses the font list built at set-up (nothing is
// rebuilt or written into a fresh /home/user, no warning); a sandbox left idle has the stack
// pre-imported and its first run that imports it gets that kernel, with the sandbox's own
// environment.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createSandbox } from "./helpers/api.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface RunResult {
  logs: { stdout: string; stderr: string };
  error: string | null;
  results: { text?: string; is_main_result?: boolean }[];
}

/** Import name of every package in the README's list. */
const IMPORTS = [
  "numpy",
  "pandas",
  "matplotlib.pyplot",
  "scipy.stats",
  "sklearn.linear_model",
  "sympy",
  "PIL.Image",
  "requests",
  "bs4",
  "lxml.etree",
  "openpyxl",
  "seaborn",
  "statsmodels.api",
  "networkx",
  "yaml",
];

let server: TestServer;
let call: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ env: { AGENTBOX_WARM_POOL: "1" } });
  call = client(server);
});

after(async () => {
  await server?.dispose();
});

async function run(sandbox: string, code: string, language = "python"): Promise<RunResult> {
  const res = await call<RunResult>("POST", `/v1/agents/sandboxes/${sandbox}/code/run`, { language, code, timeout: 120 });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

const kill = (sandbox: string) => call("DELETE", `/v1/agents/sandboxes/${sandbox}`);

test("every package of the data stack imports in a new sandbox", async () => {
  const failures: string[] = [];
  for (const name of IMPORTS) {
    const id = await createSandbox(call);
    const r = await run(id, `import ${name}\n${name}.__name__`);
    if (r.error !== null || r.results[0]?.text !== `'${name}'`)
      failures.push(`${name}: ${r.error ?? JSON.stringify(r.results)}\n${r.logs.stderr}`);
    await kill(id);
  }
  assert.deepEqual(failures, []);
});

describe("matplotlib", () => {
  let id: string;
  before(async () => {
    id = await createSandbox(call);
  });

  test("non-interactive, the font list built at set-up, nothing written into /home/user, no warning", async () => {
    const code = [
      "import os, matplotlib",
      "import matplotlib.pyplot as plt",
      "plt.plot([1, 2]); plt.text(0, 0, 'font')",
      "plt.savefig('/tmp/plot.png')",
      "cache = matplotlib.get_cachedir()",
      "fontlist = [f for f in os.listdir(cache) if f.startswith('fontlist-')]",
      "print(matplotlib.get_backend(), cache, len(fontlist), os.path.islink(os.path.join(cache, fontlist[0])))",
      "print(sorted(os.listdir('/home/user')))",
    ].join("\n");
    const r = await run(id, code);
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.logs.stderr, "");
    // Still a link to the read-only list: matplotlib did not rebuild it.
    assert.equal(r.logs.stdout, "agg /tmp/matplotlib 1 True\n[]\n");
  });

  test("a script run as a command is non-interactive too, without warnings", async () => {
    const res = await call<{ stdout: string; stderr: string; exit_code: number }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
      command: "python3 -c 'import matplotlib.pyplot as plt; plt.plot([1]); plt.savefig(\"/tmp/c.png\"); print(plt.get_backend())'",
      timeout: 60_000,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.exit_code, 0, res.body.stderr);
    assert.equal(res.body.stdout, "agg\n");
    assert.equal(res.body.stderr, "");
  });
});

test("a sandbox left idle has the stack pre-imported: its first run that imports it uses that kernel, with the sandbox's environment", async () => {
  const code = [
    "import os, sys",
    "pre = 'pandas' in sys.modules",
    "import numpy as np, pandas as pd, matplotlib.pyplot as plt",
    "print(pre, os.environ.get('DATA_ENV'), os.getcwd(), int(pd.Series([1, 2]).sum()))",
  ].join("\n");
  // The pool's sandbox pre-imports once creates have been quiet for a second (checked every second),
  // after its own second of idle and the import itself: ~3-4 s on a quiet machine, so each try
  // waits 6 s after the last create; a busy test machine gets up to 90 s.
  const deadline = Date.now() + 90_000;
  let warm = false;
  while (!warm && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 6000));
    const id = await createSandbox(call, { env_vars: { DATA_ENV: "from-create" } });
    const r = await run(id, code);
    assert.equal(r.error, null, r.logs.stderr);
    assert.match(r.logs.stdout, /^(True|False) from-create \/home\/user 3\n$/);
    warm = r.logs.stdout.startsWith("True");
    if (warm) {
      // The claimed kernel is the sandbox's python kernel from then on.
      const next = await run(id, "x = pd.DataFrame({'a': [1]})\nlen(x)");
      assert.deepEqual(next.results, [{ text: "1", is_main_result: true }]);
    }
    await kill(id);
  }
  assert.ok(warm, "no sandbox had the data stack pre-imported within 90 s");
});

test("a first run that does not import the stack gets a plain kernel", async () => {
  await new Promise((r) => setTimeout(r, 3000));
  const id = await createSandbox(call);
  const r = await run(id, "import sys\nprint('pandas' in sys.modules)");
  assert.equal(r.logs.stdout, "False\n");
  // ...and a later import still works (at the ordinary cost).
  const later = await run(id, "import pandas\npandas.__name__");
  assert.deepEqual(later.results, [{ text: "'pandas'", is_main_result: true }]);
  await kill(id);
});
