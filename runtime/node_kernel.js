// A persistent JavaScript/TypeScript kernel inside a sandbox. The supervisor writes one JSON
// request per line on fd 3 ({code, timeout_ms, env, async, output_cap}); the kernel runs it in its
// own global scope (so globals persist between runs) and answers {error, exec_ms} on the same fd,
// after one {"result": {...}} line for the cell's value when it has one (notebook semantics: the
// last expression's value, formatted as util.inspect does). The code arrives already transformed
// by the service (types stripped, top-level await wrapped).

const net = require("node:net");
const util = require("node:util");
const vm = require("node:vm");
const { createRequire } = require("node:module");

// The working directory is set by the supervisor when it starts the kernel (a context's cwd, else
// /home/user); modules resolve from /home/user either way.
globalThis.require = createRequire("/home/user/");
globalThis.module = { exports: {} };
globalThis.exports = globalThis.module.exports;
globalThis.__filename = "/home/user/cell.js";
globalThis.__dirname = "/home/user";

// An error nobody caught (a rejected promise, a throw in a callback) while a run is in progress is
// that run's error; one that happens between runs has no run to report to and is dropped.
let inRun = null;
function reportLate(err) {
  process.stderr.write(`${describeStack(err)}\n`);
  if (inRun && inRun.error === null) inRun.error = describe(err);
}
process.on("uncaughtException", (err) => reportLate(err));
process.on("unhandledRejection", (err) => reportLate(err));

function describeStack(err) {
  if (err instanceof Error) {
    // Keep the user's frames; the kernel's own frames are noise to them.
    const lines = String(err.stack || `${err.name}: ${err.message}`).split("\n");
    return lines.filter((l) => !/^\s+at .*(node:vm|node:internal|\/opt\/agentbox\/)/.test(l)).join("\n");
  }
  return `Uncaught ${safeString(err)}`;
}

function describe(err) {
  if (err instanceof Error) {
    const first = String(err.message).split("\n")[0];
    return first ? `${err.name}: ${first}` : err.name;
  }
  return `Uncaught ${safeString(err)}`;
}

function safeString(v) {
  try {
    return String(v);
  } catch {
    return typeof v;
  }
}

/**
 * One rich result on the control socket; one too large for the run's output cap is only announced.
 * Every line written there starts on a line of its own: code may have left a partial line on fd 3.
 */
function sendResult(result, cap) {
  let line = JSON.stringify({ result });
  const size = Buffer.byteLength(line);
  if (typeof cap === "number" && size > cap) line = JSON.stringify({ result_dropped: size });
  ctl.write(`\n${line}\n`);
}

async function runOne(req) {
  const started = process.hrtime.bigint();
  const savedEnv = req.env && Object.keys(req.env).length ? { ...process.env } : null;
  if (savedEnv) Object.assign(process.env, req.env);
  const run = { error: null };
  inRun = run;
  try {
    const script = new vm.Script(req.code, { filename: "cell.js" });
    let value = script.runInThisContext({ timeout: req.timeout_ms, breakOnSigint: true, displayErrors: false });
    if (req.async) value = await value;
    if (value !== undefined) sendResult({ text: util.inspect(value), is_main_result: true }, req.output_cap);
  } catch (err) {
    process.stderr.write(`${describeStack(err)}\n`);
    if (run.error === null) run.error = describe(err);
  }
  // Let rejections the cell left unhandled surface (they are reported after the microtask queue drains).
  await new Promise((resolve) => setImmediate(resolve));
  inRun = null;
  const error = run.error;
  if (savedEnv) {
    for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
    Object.assign(process.env, savedEnv);
  }
  return { error, exec_ms: Number((process.hrtime.bigint() - started) / 1000000n) };
}

const ctl = new net.Socket({ fd: 3, readable: true, writable: true });
let buffered = "";
let queue = Promise.resolve();
ctl.setEncoding("utf8");
ctl.on("data", (chunk) => {
  buffered += chunk;
  let nl = buffered.indexOf("\n");
  while (nl >= 0) {
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    const req = JSON.parse(line);
    queue = queue.then(async () => {
      const reply = await runOne(req);
      ctl.write(`\n${JSON.stringify(reply)}\n`);
    });
    nl = buffered.indexOf("\n");
  }
});
ctl.on("end", () => process.exit(0));
