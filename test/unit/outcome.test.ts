// classifyRun (src/sandbox/outcome.ts): every way a run ends, to its outcome, whether the kernel's
// state was lost and the message. Precedence: backstop, gone (OOM or not), OOM, timeout,
// truncation, a non-zero status, a kernel that exited, the run's own error.
import assert from "node:assert/strict";
import { test } from "node:test";
import { classifyRun, type RunEnd } from "../../src/sandbox/outcome.js";

const base: Omit<RunEnd, "end"> = { language: "python", timeoutS: 2, memoryMb: 512, outputCap: 100, oom: false, truncated: false };
const run = (end: RunEnd["end"], extra: Partial<RunEnd> = {}) => classifyRun({ ...base, end, ...extra });

test("a clean run is ok, state kept", () => {
  assert.deepEqual(run({ ev: "done", id: "r1" }), { outcome: "ok", stateLost: false, error: null });
});

test("the run's own exception is an error with the kernel kept", () => {
  assert.deepEqual(run({ ev: "done", id: "r1", error: "ZeroDivisionError: division by zero" }), {
    outcome: "error",
    stateLost: false,
    error: "ZeroDivisionError: division by zero",
  });
  assert.deepEqual(run({ ev: "done", id: "r1", rc: 3 }, { language: "bash" }), {
    outcome: "error",
    stateLost: false,
    error: "exit status 3",
  });
});

test("the service's backstop is a timeout with all state lost", () => {
  const v = run({ ev: "backstop" });
  assert.equal(v.outcome, "timeout");
  assert.equal(v.stateLost, true);
  assert.match(v.error ?? "", /timed out after 2 seconds; the sandbox was restarted/);
});

test("processes gone: out of memory when the OOM counter moved, else kernel lost", () => {
  const oom = run({ ev: "gone" }, { oom: true });
  assert.equal(oom.outcome, "oom");
  assert.equal(oom.stateLost, true);
  assert.match(oom.error ?? "", /^Out of memory: the sandbox's limit of 512 MiB/);
  const lost = run({ ev: "gone" });
  assert.equal(lost.outcome, "kernel_lost");
  assert.match(lost.error ?? "", /processes ended unexpectedly/);
});

test("OOM wins over timeout and truncation; the state-lost suffix follows the supervisor", () => {
  const v = run({ ev: "done", id: "r1", timed_out: true, state_lost: true }, { oom: true, truncated: true });
  assert.deepEqual(v, {
    outcome: "oom",
    stateLost: true,
    error: "Out of memory: the sandbox's limit of 512 MiB was reached; the kernel was restarted and its state was lost",
  });
});

test("a timeout says whether the kernel survived the interrupt", () => {
  assert.match(run({ ev: "done", id: "r1", timed_out: true }).error ?? "", /interrupted and the kernel's state was kept$/);
  const lost = run({ ev: "done", id: "r1", timed_out: true, state_lost: true });
  assert.equal(lost.stateLost, true);
  assert.match(lost.error ?? "", /its state was lost$/);
  assert.match(run({ ev: "done", id: "r1", timed_out: true }, { timeoutS: 1 }).error ?? "", /after 1 second;/);
});

test("truncation from either side is output_limit", () => {
  assert.equal(run({ ev: "done", id: "r1" }, { truncated: true }).outcome, "output_limit");
  assert.equal(run({ ev: "done", id: "r1", truncated: true }).outcome, "output_limit");
  assert.match(run({ ev: "done", id: "r1", truncated: true }).error ?? "", /limit of 100 bytes/);
});

test("a kernel that exited lost its state; bash says so in its own words", () => {
  const py = run({ ev: "done", id: "r1", exit_status: -9, state_lost: true });
  assert.deepEqual(py, {
    outcome: "kernel_lost",
    stateLost: true,
    error: "The kernel exited unexpectedly (status -9); it was restarted and its state was lost",
  });
  assert.match(run({ ev: "done", id: "r1", exit_status: 1 }, { language: "bash" }).error ?? "", /^exit status 1 \(the bash kernel exited/);
});
