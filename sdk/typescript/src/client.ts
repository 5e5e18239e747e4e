// The AgentBox client: sandboxes, the inference gateway, vectors and the admin API, each a thin
// wrapper over the typed `call`, which also reaches any route directly (`ab.http.call(...)`).
import type { Answer, ClientOptions, JsonBody, Operation, QueryParams } from "./http.js";
import { HttpClient } from "./http.js";
import { Deployments, Files, Snapshots, Webhooks } from "./platform.js";
import { type CreateSandboxParams, type ListSandboxesQuery, Sandbox } from "./sandbox.js";
import { readEvents } from "./sse.js";
import { Templates } from "./templates.js";

type ChatBody = NonNullable<JsonBody<Operation<"post", "/v1/inference/chat/completions">>>;
export type ChatCompletion = {
  id: string;
  object: "chat.completion";
  model: string;
  choices: Array<{
    index: number;
    message: { role: string; content: string | null; tool_calls?: unknown[] };
    finish_reason: string | null;
  }>;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
};
export type ChatChunk = {
  id: string;
  object: "chat.completion.chunk";
  model: string;
  choices: Array<{
    index: number;
    delta: { role?: string; content?: string | null; tool_calls?: unknown[] };
    finish_reason: string | null;
  }>;
};

export class AgentBox {
  readonly http: HttpClient;
  readonly sandboxes: Sandboxes;
  readonly inference: Inference;
  readonly vectors: Vectors;
  readonly admin: Admin;
  readonly files: Files;
  readonly deployments: Deployments;
  readonly snapshots: Snapshots;
  readonly webhooks: Webhooks;
  readonly templates: Templates;

  constructor(opts: ClientOptions = {}) {
    this.http = new HttpClient(opts);
    this.sandboxes = new Sandboxes(this.http);
    this.inference = new Inference(this.http);
    this.vectors = new Vectors(this.http);
    this.admin = new Admin(this.http);
    this.files = new Files(this.http);
    this.deployments = new Deployments(this.http);
    this.snapshots = new Snapshots(this.http);
    this.webhooks = new Webhooks(this.http);
    this.templates = new Templates(this.http);
  }
}

export class Sandboxes {
  constructor(private readonly http: HttpClient) {}

  /** Creates a sandbox (from the warm pool when one is ready); `template`: a built-in or one of the tenant's, by id or name. */
  async create(params: CreateSandboxParams = {}): Promise<Sandbox> {
    return new Sandbox(this.http, await this.http.call("post", "/v1/agents/sandboxes", { body: params }));
  }

  /** Connects to an existing sandbox of this key's tenant. */
  async get(sandboxId: string): Promise<Sandbox> {
    return new Sandbox(this.http, await this.http.call("get", "/v1/agents/sandboxes/{sandbox_id}", { path: { sandbox_id: sandboxId } }));
  }

  list(query: ListSandboxesQuery = {}) {
    return this.http.call("get", "/v1/agents/sandboxes", { query });
  }

  kill(sandboxId: string) {
    return this.http.call("delete", "/v1/agents/sandboxes/{sandbox_id}", { path: { sandbox_id: sandboxId } });
  }

  templates() {
    return this.http.call("get", "/v1/agents/templates", {});
  }
}

export class Inference {
  constructor(private readonly http: HttpClient) {}

  models() {
    return this.http.call("get", "/v1/inference/models", {});
  }

  /** A chat completion (OpenAI-compatible). */
  async chat(body: ChatBody & { stream?: false }, opts: { signal?: AbortSignal } = {}): Promise<ChatCompletion> {
    return (await this.http.call("post", "/v1/inference/chat/completions", { body, ...opts })) as ChatCompletion;
  }

  /** A streamed chat completion: yields the chunks as the model writes them. */
  async *chatStream(body: ChatBody, opts: { signal?: AbortSignal } = {}): AsyncGenerator<ChatChunk> {
    const res = await this.http.send("post", "/v1/inference/chat/completions", { body: { ...body, stream: true }, ...opts });
    if (!res.body) return;
    for await (const ev of readEvents(res.body)) {
      if (ev.data === "[DONE]") return;
      yield JSON.parse(ev.data) as ChatChunk;
    }
  }

  /** A legacy text completion (`prompt` in, `choices[].text` out). */
  completions(body: NonNullable<JsonBody<Operation<"post", "/v1/inference/completions">>> & { stream?: false }) {
    return this.http.call("post", "/v1/inference/completions", { body });
  }

  embeddings(body: NonNullable<JsonBody<Operation<"post", "/v1/inference/embeddings">>>) {
    return this.http.call("post", "/v1/inference/embeddings", { body });
  }

  usage(query: NonNullable<QueryParams<Operation<"get", "/v1/inference/usage">>> = {}) {
    return this.http.call("get", "/v1/inference/usage", { query });
  }
}

type VectorIndex = Answer<Operation<"get", "/v1/vectors/indexes/{index_id}">>;

export class Vectors {
  constructor(private readonly http: HttpClient) {}

  createIndex(body: NonNullable<JsonBody<Operation<"post", "/v1/vectors/indexes">>>) {
    return this.http.call("post", "/v1/vectors/indexes", { body });
  }

  listIndexes(query: NonNullable<QueryParams<Operation<"get", "/v1/vectors/indexes">>> = {}) {
    return this.http.call("get", "/v1/vectors/indexes", { query });
  }

  getIndex(indexId: string): Promise<VectorIndex> {
    return this.http.call("get", "/v1/vectors/indexes/{index_id}", { path: { index_id: indexId } });
  }

  deleteIndex(indexId: string) {
    return this.http.call("delete", "/v1/vectors/indexes/{index_id}", { path: { index_id: indexId } });
  }

  upsert(index: string, body: NonNullable<JsonBody<Operation<"post", "/v1/vectors/{index}/batch">>>) {
    return this.http.call("post", "/v1/vectors/{index}/batch", { path: { index }, body });
  }

  upsertText(index: string, body: NonNullable<JsonBody<Operation<"post", "/v1/vectors/{index}/text/batch">>>) {
    return this.http.call("post", "/v1/vectors/{index}/text/batch", { path: { index }, body });
  }

  search(index: string, body: NonNullable<JsonBody<Operation<"post", "/v1/vectors/{index}/search">>>) {
    return this.http.call("post", "/v1/vectors/{index}/search", { path: { index }, body });
  }

  searchText(index: string, body: NonNullable<JsonBody<Operation<"post", "/v1/vectors/{index}/search/text">>>) {
    return this.http.call("post", "/v1/vectors/{index}/search/text", { path: { index }, body });
  }

  delete(index: string, body: NonNullable<JsonBody<Operation<"post", "/v1/vectors/{index}/delete">>>) {
    return this.http.call("post", "/v1/vectors/{index}/delete", { path: { index }, body });
  }
}

/** The operator's admin API (needs the admin key). */
export class Admin {
  constructor(private readonly http: HttpClient) {}

  createKey(body: NonNullable<JsonBody<Operation<"post", "/v1/admin/keys">>>) {
    return this.http.call("post", "/v1/admin/keys", { body });
  }

  async listKeys(query: NonNullable<QueryParams<Operation<"get", "/v1/admin/keys">>> = {}) {
    return (await this.http.call("get", "/v1/admin/keys", { query })).keys;
  }

  revokeKey(id: string) {
    return this.http.call("delete", "/v1/admin/keys/{id}", { path: { id } });
  }

  async listTenants() {
    return (await this.http.call("get", "/v1/admin/tenants", {})).tenants;
  }

  getTenant(id: string) {
    return this.http.call("get", "/v1/admin/tenants/{id}", { path: { id } });
  }

  setTenant(id: string, body: NonNullable<JsonBody<Operation<"put", "/v1/admin/tenants/{id}">>>) {
    return this.http.call("put", "/v1/admin/tenants/{id}", { path: { id }, body });
  }
}
