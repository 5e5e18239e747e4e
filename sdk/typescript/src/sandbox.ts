// One sandbox, as an object: run code (plain or streamed), commands, files, code contexts, metrics,
// timeout and kill. Every method is a thin call of one route through HttpClient.
import { AgentBoxError } from "./errors.js";
import type { Answer, HttpClient, JsonBody, Operation, QueryParams } from "./http.js";
import { readEvents } from "./sse.js";

const SANDBOX = "/v1/agents/sandboxes/{sandbox_id}" as const;
export type SandboxInfo = Answer<Operation<"get", "/v1/agents/sandboxes/{sandbox_id}">>;
export type CreateSandboxParams = NonNullable<JsonBody<Operation<"post", "/v1/agents/sandboxes">>>;
export type ListSandboxesQuery = NonNullable<QueryParams<Operation<"get", "/v1/agents/sandboxes">>>;
type RunBody = NonNullable<JsonBody<Operation<"post", "/v1/agents/sandboxes/{sandbox_id}/code/run">>>;
export type RunResult = Answer<Operation<"post", "/v1/agents/sandboxes/{sandbox_id}/code/run">>;
export type RichResult = NonNullable<RunResult["results"]>[number];
type CommandBody = NonNullable<JsonBody<Operation<"post", "/v1/agents/sandboxes/{sandbox_id}/commands/run">>>;
export type CommandResult = Extract<Answer<Operation<"post", "/v1/agents/sandboxes/{sandbox_id}/commands/run">>, { exit_code: unknown }>;
export type FileEntry = Answer<Operation<"post", "/v1/agents/sandboxes/{sandbox_id}/files/list">>["files"][number];
export type CodeContext = Answer<Operation<"get", "/v1/agents/sandboxes/{sandbox_id}/code/contexts/{context_id}">>;
export type SandboxMetrics = Answer<Operation<"get", "/v1/agents/sandboxes/{sandbox_id}/metrics">>;

export type RunOptions = Omit<RunBody, "code" | "stream" | "language"> & { language?: RunBody["language"]; signal?: AbortSignal };
export type CommandOptions = Omit<CommandBody, "command" | "stream" | "background"> & { signal?: AbortSignal };

/** What a streamed run yields, in order: output as it is written, rich results, then the answer. */
export type RunEvent =
  | { type: "stdout"; text: string }
  | { type: "stderr"; text: string }
  | { type: "result"; result: RichResult }
  | { type: "end"; result: RunResult };

export type CommandEvent = { type: "stdout"; text: string } | { type: "stderr"; text: string } | { type: "end"; result: CommandResult };

/** The request timeout for a call that may run `timeoutS` seconds inside the sandbox. */
const runTimeoutMs = (timeoutS: number | undefined, fallbackS: number) => ((timeoutS ?? fallbackS) + 30) * 1000;

export class Sandbox {
  readonly files: SandboxFiles;
  readonly commands: SandboxCommands;
  readonly contexts: SandboxContexts;
  readonly network: SandboxNetwork;

  constructor(
    private readonly http: HttpClient,
    /** The sandbox object as last read (`refresh()` reads it again). */
    public info: SandboxInfo,
  ) {
    this.files = new SandboxFiles(http, info.sandbox_id);
    this.commands = new SandboxCommands(http, info.sandbox_id);
    this.contexts = new SandboxContexts(http, info.sandbox_id);
    this.network = new SandboxNetwork(http, info.sandbox_id);
  }

  get id(): string {
    return this.info.sandbox_id;
  }

  /** Runs code in the sandbox's persistent kernel (python by default). With `{stream: true}` it
   * yields events as they happen; leaving the loop early interrupts the run. */
  runCode(code: string, opts: RunOptions & { stream: true }): AsyncGenerator<RunEvent>;
  runCode(code: string, opts?: RunOptions & { stream?: false }): Promise<RunResult>;
  runCode(code: string, opts: RunOptions & { stream?: boolean } = {}): Promise<RunResult> | AsyncGenerator<RunEvent> {
    const { signal, stream, ...rest } = opts;
    const body: RunBody = { ...rest, code, language: rest.language ?? "python" };
    const timeoutMs = runTimeoutMs(body.timeout, 30);
    const route = `${SANDBOX}/code/run` as const;
    if (!stream) return this.http.call("post", route, { path: { sandbox_id: this.id }, body, signal, timeoutMs });
    const send = () => this.http.send("post", route, { path: { sandbox_id: this.id }, body: { ...body, stream: true }, signal, timeoutMs });
    return streamEvents<RunResult>(send, "run") as AsyncGenerator<RunEvent>;
  }

  /** Reads the sandbox object again (status, timeout_at, ...). */
  async refresh(): Promise<SandboxInfo> {
    this.info = await this.http.call("get", SANDBOX, { path: { sandbox_id: this.id } });
    return this.info;
  }

  /** Sets the sandbox's remaining life to `seconds` from now. */
  setTimeout(seconds: number) {
    return this.http.call("post", `${SANDBOX}/timeout`, { path: { sandbox_id: this.id }, body: { timeout: seconds } });
  }

  metrics(): Promise<SandboxMetrics> {
    return this.http.call("get", `${SANDBOX}/metrics`, { path: { sandbox_id: this.id } });
  }

  /** Freezes every process (memory and kernel state kept, no CPU, the life clock stopped). */
  pause() {
    return this.http.call("post", `${SANDBOX}/pause`, { path: { sandbox_id: this.id } });
  }

  /** Continues a paused sandbox exactly where it stopped. */
  resume() {
    return this.http.call("post", `${SANDBOX}/resume`, { path: { sandbox_id: this.id } });
  }

  /** Saves /home/user and the sandbox's settings; `ab.sandboxes.create({snapshot_id})` restores it. */
  snapshot() {
    return this.http.call("post", `${SANDBOX}/snapshots`, { path: { sandbox_id: this.id }, timeoutMs: 600_000 });
  }

  /**
   * Saves this running sandbox as a template of the tenant's, ready at once: its root and what its
   * /home/user holds now; `ab.sandboxes.create({template: name})` starts sandboxes from it.
   */
  saveAsTemplate(name: string, opts: { description?: string } = {}) {
    return this.http.call("post", `${SANDBOX}/template`, {
      path: { sandbox_id: this.id },
      body: { name, ...(opts.description !== undefined ? { description: opts.description } : {}) },
      timeoutMs: 600_000,
    });
  }

  /** Makes `count` copies of this sandbox's files and settings (kernel state is not copied). */
  async fork(count = 1): Promise<{ sandboxes: Sandbox[]; kernel_state: string }> {
    const r = await this.http.call("post", `${SANDBOX}/fork`, { path: { sandbox_id: this.id }, body: { count }, timeoutMs: 600_000 });
    return { sandboxes: r.sandboxes.map((info) => new Sandbox(this.http, info)), kernel_state: r.kernel_state };
  }

  /** What happened to the sandbox: created, paused, resumed, snapshotted, timeout_extended, ended (with the reason). */
  events() {
    return this.http.call("get", `${SANDBOX}/events`, { path: { sandbox_id: this.id } });
  }

  /** The URL that reaches an HTTP server listening on `port` inside the sandbox (with the API key). */
  async hostUrl(port: number): Promise<string> {
    return (await this.http.call("get", `${SANDBOX}/host/{port}`, { path: { sandbox_id: this.id, port: String(port) } })).url;
  }

  /** A signed URL to `port` that works without the key until it expires. */
  sharePort(port: number, expiresIn: number) {
    return this.http.call("post", `${SANDBOX}/ports/{port}/share`, {
      path: { sandbox_id: this.id, port: String(port) },
      body: { expires_in: expiresIn },
    });
  }

  /** Ends the sandbox: every process stops, every file is removed. */
  kill() {
    return this.http.call("delete", SANDBOX, { path: { sandbox_id: this.id } });
  }
}

export class SandboxFiles {
  constructor(
    private readonly http: HttpClient,
    private readonly id: string,
  ) {}

  /** Reads a text file (UTF-8). Use `download` for bytes. */
  async read(path: string): Promise<string> {
    const r = await this.http.call("post", `${SANDBOX}/files/read`, { path: { sandbox_id: this.id }, body: { path } });
    return r.content;
  }

  /** Creates or replaces a text file (parents are created). Use `upload` for bytes. */
  write(path: string, content: string) {
    return this.http.call("post", `${SANDBOX}/files/write`, { path: { sandbox_id: this.id }, body: { path, content } });
  }

  async list(path = "/home/user"): Promise<FileEntry[]> {
    return (await this.http.call("post", `${SANDBOX}/files/list`, { path: { sandbox_id: this.id }, body: { path } })).files;
  }

  remove(path: string) {
    return this.http.call("post", `${SANDBOX}/files/delete`, { path: { sandbox_id: this.id }, body: { path } });
  }

  mkdir(path: string) {
    return this.http.call("post", `${SANDBOX}/files/mkdir`, { path: { sandbox_id: this.id }, body: { path } });
  }

  /** Uploads bytes to `path` (binary-safe, streamed by the service). */
  upload(path: string, data: Blob | Uint8Array | string, opts: { signal?: AbortSignal; timeoutMs?: number } = {}) {
    const form = new FormData();
    form.append("path", path);
    const blob = data instanceof Blob ? data : new Blob([data as BlobPart]);
    form.append("file", blob, path.split("/").pop() || "file");
    return this.http.call("post", `${SANDBOX}/upload`, { path: { sandbox_id: this.id }, rawBody: form, ...opts });
  }

  /** Copies a stored file (`/v1/files`) into the sandbox at `path`. */
  importFile(fileId: string, path: string) {
    return this.http.call("post", `${SANDBOX}/files/import`, {
      path: { sandbox_id: this.id },
      body: { file_id: fileId, path },
      timeoutMs: 3_600_000,
    });
  }

  /** Stores a sandbox file as a new stored file (`/v1/files`). */
  exportFile(path: string, purpose: NonNullable<JsonBody<Operation<"post", "/v1/agents/sandboxes/{sandbox_id}/files/export">>>["purpose"]) {
    return this.http.call("post", `${SANDBOX}/files/export`, {
      path: { sandbox_id: this.id },
      body: { path, purpose },
      timeoutMs: 3_600_000,
    });
  }

  /** Downloads a file's bytes. */
  async download(path: string, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<Uint8Array> {
    const res = await this.downloadStream(path, opts);
    return new Uint8Array(await res.arrayBuffer());
  }

  /** Downloads as a Response whose body streams (Content-Length says the size). */
  downloadStream(path: string, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<Response> {
    return this.http.send("get", `${SANDBOX}/download`, { path: { sandbox_id: this.id }, query: { path }, ...opts });
  }
}

export class SandboxCommands {
  constructor(
    private readonly http: HttpClient,
    private readonly id: string,
  ) {}

  /** Runs a command to completion (`bash -c` when there are no `args`). With `{stream: true}` it
   * yields output as it is written, then the result. */
  run(command: string, opts: CommandOptions & { stream: true }): AsyncGenerator<CommandEvent>;
  run(command: string, opts?: CommandOptions & { stream?: false }): Promise<CommandResult>;
  run(command: string, opts: CommandOptions & { stream?: boolean } = {}): Promise<CommandResult> | AsyncGenerator<CommandEvent> {
    const { signal, stream, ...rest } = opts;
    const timeoutMs = runTimeoutMs(typeof rest.timeout === "number" ? rest.timeout / 1000 : undefined, 30);
    const route = `${SANDBOX}/commands/run` as const;
    const body = { ...rest, command };
    if (!stream) {
      return this.http.call("post", route, { path: { sandbox_id: this.id }, body, signal, timeoutMs }).then((r) => r as CommandResult);
    }
    const send = () => this.http.send("post", route, { path: { sandbox_id: this.id }, body: { ...body, stream: true }, signal, timeoutMs });
    return streamEvents<CommandResult>(send, "command") as AsyncGenerator<CommandEvent>;
  }

  /** Starts a command in the background; answers its pid at once. */
  async start(command: string, opts: CommandOptions = {}) {
    const { signal, ...rest } = opts;
    const r = await this.http.call("post", `${SANDBOX}/commands/run`, {
      path: { sandbox_id: this.id },
      body: { ...rest, command, background: true },
      signal,
    });
    return r as Extract<typeof r, { pid: number }>;
  }

  async list() {
    return (await this.http.call("get", `${SANDBOX}/commands`, { path: { sandbox_id: this.id } })).commands;
  }

  get(pid: number) {
    return this.http.call("get", `${SANDBOX}/commands/{pid}`, { path: { sandbox_id: this.id, pid: String(pid) } });
  }

  sendStdin(pid: number, data: string, eof = false) {
    return this.http.call("post", `${SANDBOX}/commands/{pid}/stdin`, {
      path: { sandbox_id: this.id, pid: String(pid) },
      body: { data, eof },
    });
  }

  kill(pid: number, signal: "TERM" | "INT" | "HUP" | "KILL" = "KILL") {
    return this.http.call("delete", `${SANDBOX}/commands/{pid}`, { path: { sandbox_id: this.id, pid: String(pid) }, query: { signal } });
  }
}

export class SandboxNetwork {
  constructor(
    private readonly http: HttpClient,
    private readonly id: string,
  ) {}

  /** The sandbox's egress policy: internet_access, allow_out, deny_out. */
  get() {
    return this.http.call("get", `${SANDBOX}/network`, { path: { sandbox_id: this.id } });
  }

  /** Changes the egress policy; the next connection follows it. */
  set(policy: NonNullable<JsonBody<Operation<"put", "/v1/agents/sandboxes/{sandbox_id}/network">>>) {
    return this.http.call("put", `${SANDBOX}/network`, { path: { sandbox_id: this.id }, body: policy });
  }

  /** Every egress attempt: host, port, resolved address, allowed or denied, bytes each way. */
  async log(limit?: number) {
    return (
      await this.http.call("get", `${SANDBOX}/network/log`, {
        path: { sandbox_id: this.id },
        query: limit === undefined ? {} : { limit: String(limit) },
      })
    ).entries;
  }
}

export class SandboxContexts {
  constructor(
    private readonly http: HttpClient,
    private readonly id: string,
  ) {}

  create(opts: NonNullable<JsonBody<Operation<"post", "/v1/agents/sandboxes/{sandbox_id}/code/contexts">>> = {}): Promise<CodeContext> {
    return this.http.call("post", `${SANDBOX}/code/contexts`, { path: { sandbox_id: this.id }, body: opts });
  }

  async list(): Promise<CodeContext[]> {
    return (await this.http.call("get", `${SANDBOX}/code/contexts`, { path: { sandbox_id: this.id } })).contexts;
  }

  delete(contextId: string) {
    return this.http.call("delete", `${SANDBOX}/code/contexts/{context_id}`, { path: { sandbox_id: this.id, context_id: contextId } });
  }
}

/** The events of a streamed run or command: output as written, rich results, then the answer
 * (`end`); an `end` carrying an error envelope throws. */
async function* streamEvents<Result>(
  send: () => Promise<Response>,
  what: "run" | "command",
): AsyncGenerator<RunEvent | CommandEvent | { type: "end"; result: Result }> {
  // Sent on the first iteration, so a stream nobody reads costs nothing.
  const res = await send();
  if (!res.body) throw new AgentBoxError({ status: res.status, code: "invalid_response", message: "The stream has no body" });
  for await (const ev of readEvents(res.body)) {
    const data = parseEventData(ev.data);
    if (ev.event === "stdout" || ev.event === "stderr") yield { type: ev.event, text: (data as { text: string }).text };
    else if (ev.event === "result") yield { type: "result", result: data as RichResult };
    else if (ev.event === "end") {
      throwIfEnvelope(data, res.status);
      yield { type: "end", result: data as Result };
      return;
    }
  }
  throw new AgentBoxError({ status: res.status, code: "connection_error", message: `The stream ended before the ${what} did` });
}

function parseEventData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch (cause) {
    throw new AgentBoxError({ status: 200, code: "invalid_response", message: "An event's data is not JSON", cause });
  }
}

/** An `end` event carrying `{error: {code, message}}` means the service failed mid-run. */
function throwIfEnvelope(data: unknown, status: number): void {
  const err = (data as { error?: unknown }).error;
  if (err && typeof err === "object" && typeof (err as { code?: unknown }).code === "string") {
    const e = err as { code: string; message?: string };
    throw new AgentBoxError({ status, code: e.code, message: e.message ?? e.code });
  }
}
