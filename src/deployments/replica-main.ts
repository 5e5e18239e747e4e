// One deployment replica: a process of its own that loads a GGUF model with the local engine and
// serves it over OpenAI-compatible HTTP on a unix socket (or a loopback port): POST /v1/chat/completions, POST
// /v1/completions (when the engine has text completions), GET /health (200 once the model is
// loaded). Started by src/deployments/replica.ts with its settings in AGENTBOX_REPLICA (JSON). It
// exits when its stdin closes (the service is gone) and drains its requests on SIGTERM.
import http from "node:http";
import { ApiError } from "../errors.js";
import { LocalProvider } from "../inference/local.js";
import type { ChatRequest, EventBatches, Provider, TextCompletionRequest } from "../inference/types.js";
import type { ReplicaSettings } from "./replica.js";

const MAX_BODY = 8 * 2 ** 20;

const settings = JSON.parse(process.env.AGENTBOX_REPLICA ?? "{}") as ReplicaSettings;
const local = new LocalProvider({
  name: "replica",
  modelPath: settings.modelPath,
  modelName: settings.modelName,
  contextSize: settings.contextSize,
  batchSize: undefined,
  threads: settings.threads,
  parallel: settings.parallel,
  gpu: settings.gpu === true,
  // Requests wait in the service's queue, not here: the router sends at most `parallel` at a time.
  timeoutMs: 600_000,
  created: Math.floor(Date.now() / 1000),
});
// Text completions are used when the engine has them (optional on the Provider interface).
const provider: Provider = local;
let loaded = false;
local.ready().then(
  () => {
    loaded = true;
  },
  (err: Error) => {
    process.stderr.write(`replica: the model failed to load: ${err.message}\n`);
    process.exit(3);
  },
);

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

function fail(res: http.ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof ApiError) {
    const headers: Record<string, string> = err.retryAfterS ? { "retry-after": String(err.retryAfterS) } : {};
    send(res, err.status, { error: { code: err.code, message: err.message } }, headers);
    return;
  }
  process.stderr.write(`replica: request failed: ${(err as Error).stack ?? String(err)}\n`);
  send(res, 500, { error: { code: "internal_error", message: "The replica failed on this request" } });
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new ApiError("payload_too_large", "Request body too large");
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

async function sse(res: http.ServerResponse, batches: EventBatches): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for await (const batch of batches) {
    if (res.destroyed) return;
    res.write(batch.map((d) => `data: ${d}\n\n`).join(""));
  }
  res.end("data: [DONE]\n\n");
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = req.url ?? "/";
  if (req.method === "GET" && url === "/health") {
    send(res, loaded ? 200 : 503, { status: loaded ? "ok" : "loading" });
    return;
  }
  const chat = url === "/v1/chat/completions";
  if (req.method !== "POST" || (!chat && url !== "/v1/completions")) {
    send(res, 404, { error: { code: "not_found", message: `No route ${req.method} ${url}` } });
    return;
  }
  const raw = await readBody(req);
  let body: ChatRequest & TextCompletionRequest;
  try {
    body = JSON.parse(raw.toString("utf8")) as ChatRequest & TextCompletionRequest;
  } catch {
    throw new ApiError("invalid_request", "The body is not JSON");
  }
  if (typeof body !== "object" || body === null) throw new ApiError("invalid_request", "The body must be a JSON object");
  body.model = settings.modelName;
  const abort = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) abort.abort(new Error("the client closed the connection"));
  });
  if (chat) {
    if (!Array.isArray(body.messages)) throw new ApiError("invalid_request", "'messages' must be an array");
    if (body.stream === true) await sse(res, await provider.stream({ body }, abort.signal));
    else send(res, 200, (await provider.complete({ body }, abort.signal)).json);
    return;
  }
  if (!provider.completeText || !provider.streamText)
    throw new ApiError("invalid_request", "This engine has no text completions; use /chat/completions");
  if (body.stream === true) await sse(res, await provider.streamText({ body }, abort.signal));
  else send(res, 200, (await provider.completeText({ body }, abort.signal)).json);
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((err: unknown) => fail(res, err));
});
server.keepAliveTimeout = 30_000;
if (settings.socket) server.listen(settings.socket);
else server.listen(settings.port, "127.0.0.1");

let stopping = false;
function stop(code: number): void {
  if (stopping) return;
  stopping = true;
  // New connections are refused; requests in flight finish, then the process ends.
  server.close(() => {
    void provider.close().finally(() => process.exit(code));
  });
  server.closeIdleConnections();
}
process.on("SIGTERM", () => stop(0));
// The service holds our stdin: end of file means it is gone, and nobody will route to us again.
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
