// End to end: rich results of code/run (notebook semantics) against the real service: a python
// cell's last expression, display(), Jupyter `_repr_*_` methods, matplotlib figures as PNG, the
// JS/TS last expression, bash's empty list, and results held to the output cap.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { RichResult } from "../src/sandbox/protocol.js";
import { createSandbox } from "./helpers/api.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface RunResult {
  logs: { stdout: string; stderr: string };
  error: string | null;
  execution_time_ms: number;
  results: RichResult[];
}

const RESULT_KEYS = new Set(["text", "html", "markdown", "png", "jpeg", "svg", "json", "latex", "is_main_result"]);

let server: TestServer;
let call: ReturnType<typeof client>;
let id: string;

before(async () => {
  server = await startServer();
  call = client(server);
  id = await createSandbox(call);
});

after(async () => {
  await server?.dispose();
});

/** Runs code: the seed's keys plus `results`, every result made only of the known keys. */
async function run(language: string, code: string, sandbox = id): Promise<RunResult> {
  const res = await call<RunResult>("POST", `/v1/agents/sandboxes/${sandbox}/code/run`, { language, code, timeout: 60 });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ["error", "execution_time_ms", "logs", "results"]);
  assert.ok(Array.isArray(res.body.results));
  for (const r of res.body.results) {
    for (const k of Object.keys(r)) assert.ok(RESULT_KEYS.has(k), `unexpected result key ${k}`);
  }
  return res.body;
}

/** The PNG signature and the size from the IHDR chunk (the first chunk, right after the signature). */
function pngSize(base64: string): { width: number; height: number } {
  const png = Buffer.from(base64, "base64");
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature");
  assert.equal(png.subarray(12, 16).toString("latin1"), "IHDR");
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** Asserts a PNG cropped to what is drawn (as Jupyter saves figures): within the figure's size, not far below it. */
function assertTight(png: string, figure: { width: number; height: number }): void {
  const { width, height } = pngSize(png);
  assert.ok(width <= figure.width && width > figure.width * 0.6, `width ${width} of ${figure.width}`);
  assert.ok(height <= figure.height && height > figure.height * 0.6, `height ${height} of ${figure.height}`);
}

describe("python", () => {
  test("the last expression is the main result and is not printed", async () => {
    const r = await run("python", "41");
    assert.deepEqual(r.results, [{ text: "41", is_main_result: true }]);
    assert.deepEqual(r.logs, { stdout: "", stderr: "" });
    assert.equal(r.error, null);
  });

  test("printed output is unchanged and comes with the value of the last line", async () => {
    const r = await run("python", "x = 20\nprint('hello')\nx * 2 + 2");
    assert.equal(r.logs.stdout, "hello\n");
    assert.deepEqual(r.results, [{ text: "42", is_main_result: true }]);
  });

  test("no result for None, a statement, or a last line ending in ';'", async () => {
    assert.deepEqual((await run("python", "None")).results, []);
    assert.deepEqual((await run("python", "y = 3")).results, []);
    assert.deepEqual((await run("python", "print('p')")).results, []);
    assert.deepEqual((await run("python", "y;")).results, []);
    assert.deepEqual((await run("python", "")).results, []);
  });

  test("an exception in the last expression: the error, no result, the traceback shows the cell only", async () => {
    const r = await run("python", "a = 1\n1 / 0");
    assert.equal(r.error, "ZeroDivisionError: division by zero");
    assert.deepEqual(r.results, []);
    assert.match(r.logs.stderr, /File "<cell>", line 2/);
    assert.doesNotMatch(r.logs.stderr, /agentbox|kernels\.py/);
  });

  test("a DataFrame gives text and html", async () => {
    const r = await run("python", "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [4.0, 5.0, 6.0]})\ndf.describe()");
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.results.length, 1);
    const [main] = r.results as [RichResult];
    assert.equal(main.is_main_result, true);
    assert.match(main.text ?? "", /count\s+3\.0+\s+3\.0+/);
    assert.match(main.html ?? "", /<table[^>]*class="dataframe"/);
    assert.match(main.html ?? "", /<th>mean<\/th>/);
  });

  test("display() needs no import; twice gives two results in order, none of them main", async () => {
    const r = await run("python", "display('first')\ndisplay({'k': [1, 2]})\nprint('after')");
    assert.deepEqual(r.results, [{ text: "'first'" }, { text: "{'k': [1, 2]}" }]);
    assert.equal(r.logs.stdout, "after\n");
    const both = await run("python", "display(1, 2)\n3");
    assert.deepEqual(both.results, [{ text: "1" }, { text: "2" }, { text: "3", is_main_result: true }]);
  });

  test("Jupyter's _repr_*_ methods are honoured; text is repr()", async () => {
    const code = [
      "class Rich:",
      "    def __repr__(self): return 'Rich()'",
      "    def _repr_html_(self): return '<b>rich</b>'",
      "    def _repr_markdown_(self): return '**rich**'",
      "    def _repr_svg_(self): return '<svg xmlns=\"http://www.w3.org/2000/svg\"/>'",
      "    def _repr_png_(self): return b'\\x89PNG-bytes'",
      "    def _repr_jpeg_(self): return (b'\\xff\\xd8jpeg', {'width': 1})",
      "    def _repr_json_(self): return {'a': [1, None]}",
      "    def _repr_latex_(self): return r'$\\alpha$'",
      "class Broken:",
      "    def __repr__(self): return 'Broken()'",
      "    def _repr_html_(self): raise ValueError('no html')",
      "display(Broken())",
      "Rich()",
    ].join("\n");
    const r = await run("python", code);
    assert.equal(r.error, null, r.logs.stderr);
    assert.deepEqual(r.results, [
      { text: "Broken()" },
      {
        html: "<b>rich</b>",
        markdown: "**rich**",
        svg: '<svg xmlns="http://www.w3.org/2000/svg"/>',
        png: Buffer.from("\x89PNG-bytes", "latin1").toString("base64"),
        jpeg: Buffer.from("\xff\xd8jpeg", "latin1").toString("base64"),
        latex: "$\\alpha$",
        json: { a: [1, null] },
        text: "Rich()",
        is_main_result: true,
      },
    ]);
    // A class is not its instances: its _repr_*_ functions are not called.
    assert.deepEqual((await run("python", "Rich")).results, [{ text: "<class '__main__.Rich'>", is_main_result: true }]);
  });

  test("a matplotlib plot is a valid PNG of the figure, cropped to what is drawn, then closed", async () => {
    const r = await run("python", "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')\nplt.show()");
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.logs.stderr, "");
    assert.equal(r.results.length, 1);
    const [fig] = r.results as [RichResult];
    assert.equal(fig.text, "<Figure size 640x480 with 1 Axes>");
    // The default figure has margins around its axes: the tight image is smaller than 640x480.
    assertTight(fig.png ?? "", { width: 640, height: 480 });
    assert.notDeepEqual(pngSize(fig.png ?? ""), { width: 640, height: 480 });
    assert.equal(fig.is_main_result, undefined);
    assert.deepEqual((await run("python", "plt.get_fignums()")).results, [{ text: "[]", is_main_result: true }]);
  });

  test("every figure shown or left open becomes a result, each once", async () => {
    const code = [
      "fig1 = plt.figure(figsize=(2, 1))",
      "plt.plot([1, 2])",
      "plt.show()",
      "fig2, ax = plt.subplots(1, 2, figsize=(3, 2))",
      "fig3 = plt.figure(figsize=(4, 4))",
      "display(fig3)",
      "None",
    ].join("\n");
    const r = await run("python", code);
    assert.equal(r.error, null, r.logs.stderr);
    assert.deepEqual(
      r.results.map((x) => x.text),
      ["<Figure size 200x100 with 1 Axes>", "<Figure size 400x400 with 0 Axes>", "<Figure size 300x200 with 2 Axes>"],
    );
    // A figure with nothing drawn keeps its size; the others are cropped to what is drawn (a tiny
    // figure's tick labels may also stick out of it: then the image grows to hold them).
    assert.deepEqual(pngSize(r.results[1]?.png ?? ""), { width: 400, height: 400 });
    for (const i of [0, 2]) assert.ok(pngSize(r.results[i]?.png ?? "").width > 0);
    // A figure as the last expression is the main result, not sent a second time at the end.
    const last = await run("python", "f, a = plt.subplots()\nf");
    assert.equal(last.results.length, 1);
    assert.equal(last.results[0]?.is_main_result, true);
    assert.equal(last.results[0]?.text, "<Figure size 640x480 with 1 Axes>");
  });

  test("a bar chart's long rotated x labels are in the image, not clipped at the figure's edge", async () => {
    const code = [
      "import pandas as pd",
      "df = pd.DataFrame({'sales': [3, 5, 2]}, index=['a rather long product category name', 'another long category', 'x'])",
      "ax = df.plot.bar(figsize=(6.4, 4.8))",
      "ax.set_xlabel('product category (all regions, fiscal year)')",
      "plt.show()",
    ].join("\n");
    const r = await run("python", code);
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.results.length, 1);
    // The rotated tick labels and the x label hang below a 480 px high canvas: saved tight, the
    // image grows to hold them (saved at the figure's size, it stayed 480 px and cut them off).
    const { height } = pngSize(r.results[0]?.png ?? "");
    assert.ok(height > 480, `the image is ${height} px high: the labels below the axes were clipped`);
  });
});

describe("javascript and typescript", () => {
  test("the last expression's value, as util.inspect formats it, is the main result and is not printed", async () => {
    const r = await run("javascript", "const o = { a: [1, 2], s: 'x' }\nconsole.log('log')\no");
    assert.equal(r.logs.stdout, "log\n");
    assert.deepEqual(r.results, [{ text: "{ a: [ 1, 2 ], s: 'x' }", is_main_result: true }]);
    assert.deepEqual((await run("javascript", "'str'")).results, [{ text: "'str'", is_main_result: true }]);
    assert.deepEqual((await run("javascript", "null")).results, [{ text: "null", is_main_result: true }]);
    assert.deepEqual((await run("typescript", "const n: number = 6; n * 7")).results, [{ text: "42", is_main_result: true }]);
  });

  test("undefined (a statement, console.log) gives no result; a cell with top-level await gives its value", async () => {
    assert.deepEqual((await run("javascript", "console.log(1)")).results, []);
    assert.deepEqual((await run("javascript", "let z = 1")).results, []);
    assert.deepEqual((await run("javascript", "const v = await Promise.resolve(5)\nv + 1")).results, [{ text: "6", is_main_result: true }]);
  });
});

test("bash gives no results", async () => {
  const r = await run("bash", "echo hi\n42");
  assert.equal(r.logs.stdout, "hi\n");
  assert.deepEqual(r.results, []);
});

test("a 50 MB image hits the output cap with a clear error; the sandbox and the service keep working", async () => {
  const code = "class Big:\n    def _repr_png_(self):\n        return b'\\x89PNG' + bytes(50 * 2**20)\nBig()";
  const r = await run("python", code);
  assert.deepEqual(r.results, []);
  assert.match(r.error ?? "", /exceeded the limit of \d+ bytes/);
  assert.match(r.logs.stderr, /result of \d+ bytes dropped/);
  // Code writing an endless line to the kernel's control socket itself is cut the same way.
  const forged = await run("python", "import os\nos.write(3, b'{\"result\":' + b'x' * (40 * 2**20))\nos.write(3, b'}\\n')");
  assert.deepEqual(forged.results, []);
  assert.match(forged.error ?? "", /exceeded the limit/);
  // An unfinished line on that socket swallows neither the cell's result nor the end of the run.
  const partial = await run("python", 'import os\nos.write(3, b\'{"result":{"text":"forged"\')\n5');
  assert.equal(partial.error, null);
  assert.deepEqual(partial.results, [{ text: "5", is_main_result: true }]);
  const next = await run("python", "print('next')\n7");
  assert.equal(next.error, null);
  assert.deepEqual(next.results, [{ text: "7", is_main_result: true }]);
  assert.equal((await call("GET", "/health")).status, 200);
});
