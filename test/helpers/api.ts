// Assertions and shortcuts shared by the end-to-end tests.
import assert from "node:assert/strict";
import type { client } from "./server.js";

export type Call = ReturnType<typeof client>;

export interface ErrorBody {
  error: { code: string; message: string };
}

/** The fields of a sandbox object in the API, sorted (a live and an ended sandbox show the same ones). */
export const SANDBOX_KEYS = [
  "cpu_count",
  "ended_at",
  "memory_mb",
  "metadata",
  "sandbox_id",
  "started_at",
  "status",
  "template",
  "template_id",
  "timeout_at",
];

/** One of a sandbox's lifecycle events, as GET /v1/agents/sandboxes/{id}/events lists them. */
export interface EventBody {
  type: string;
  at: string;
  reason: string | null;
  detail: Record<string, unknown>;
}

/** The lifecycle events of a sandbox (the response, so a test can also check refusals). */
export const sandboxEvents = (call: Call, id: string) => call<EventBody[]>("GET", `/v1/agents/sandboxes/${id}/events`);

/** Creates a sandbox (201 expected) and returns its id. */
export async function createSandbox(call: Call, body: Record<string, unknown> = {}): Promise<string> {
  const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.sandbox_id;
}

/** Expects a rejected request: the status and the error envelope {"error": {"code", "message"}}, nothing else. */
export function assertError(res: { status: number; body: unknown }, status: number, code: string): ErrorBody {
  assert.equal(res.status, status, JSON.stringify(res.body));
  const body = res.body as ErrorBody;
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message"]);
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, "string");
  assert.ok(body.error.message.length > 0);
  return body;
}

/** Runs python in a sandbox and returns its stdout; fails the test on an error. */
export async function pythonStdout(call: Call, id: string, code: string, timeout = 60): Promise<string> {
  const res = await call<{ logs: { stdout: string; stderr: string }; error: string | null }>(
    "POST",
    `/v1/agents/sandboxes/${id}/code/run`,
    {
      language: "python",
      code,
      timeout,
    },
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.error, null, `${res.body.error}\n${res.body.logs.stderr}`);
  return res.body.logs.stdout;
}

/** Python defining fetch(url): a GET through the sandbox's proxy settings, returned as "status body" (or "ERR ..."). */
export const PY_FETCH = `
import urllib.request, urllib.error
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return "%d %s" % (r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        return "%d %s" % (e.code, e.read().decode().strip())
    except Exception as e:
        return "ERR %s" % e
`;
