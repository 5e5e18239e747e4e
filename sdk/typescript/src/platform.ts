// The platform's other areas as the SDK shows them: stored files (/v1/files), deployments and
// accelerators, snapshots, and webhooks. Thin wrappers over the typed `call`.
import type { HttpClient, JsonBody, Operation, QueryParams } from "./http.js";

export type FilePurpose = "assistants" | "batch" | "batch_output" | "fine-tune" | "vision" | "user_data" | "evals";

export class Files {
  constructor(private readonly http: HttpClient) {}

  /** Uploads bytes as a stored file (streamed by the service, checksummed, optionally expiring). */
  upload(data: Blob | Uint8Array | string, opts: { filename: string; purpose: FilePurpose; expiresAfter?: number; signal?: AbortSignal }) {
    const form = new FormData();
    form.append("purpose", opts.purpose);
    if (opts.expiresAfter !== undefined) form.append("expires_after", String(opts.expiresAfter));
    form.append("file", data instanceof Blob ? data : new Blob([data as BlobPart]), opts.filename);
    return this.http.call("post", "/v1/files", { rawBody: form, signal: opts.signal, timeoutMs: 3_600_000 });
  }

  list(query: NonNullable<QueryParams<Operation<"get", "/v1/files">>> = {}) {
    return this.http.call("get", "/v1/files", { query });
  }

  get(fileId: string) {
    return this.http.call("get", "/v1/files/{file_id}", { path: { file_id: fileId } });
  }

  /** The file's bytes. */
  async content(fileId: string, opts: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
    const res = await this.http.send("get", "/v1/files/{file_id}/content", { path: { file_id: fileId }, timeoutMs: 3_600_000, ...opts });
    return new Uint8Array(await res.arrayBuffer());
  }

  delete(fileId: string) {
    return this.http.call("delete", "/v1/files/{file_id}", { path: { file_id: fileId } });
  }
}

export class Deployments {
  constructor(private readonly http: HttpClient) {}

  create(body: NonNullable<JsonBody<Operation<"post", "/v1/deployments/create">>>) {
    return this.http.call("post", "/v1/deployments/create", { body });
  }

  async list() {
    return (await this.http.call("get", "/v1/deployments/list", {})).deployments;
  }

  get(deploymentId: string) {
    return this.http.call("get", "/v1/deployments/{deployment_id}", { path: { deployment_id: deploymentId } });
  }

  delete(deploymentId: string) {
    return this.http.call("delete", "/v1/deployments/delete/{deployment_id}", { path: { deployment_id: deploymentId } });
  }

  /** This machine's hardware (CPU, memory, GPUs) as deployments can use it. */
  async accelerators() {
    return (await this.http.call("get", "/v1/accelerators", {})).accelerators;
  }
}

export class Snapshots {
  constructor(private readonly http: HttpClient) {}

  list(query: NonNullable<QueryParams<Operation<"get", "/v1/agents/snapshots">>> = {}) {
    return this.http.call("get", "/v1/agents/snapshots", { query });
  }

  get(snapshotId: string) {
    return this.http.call("get", "/v1/agents/snapshots/{snapshot_id}", { path: { snapshot_id: snapshotId } });
  }

  delete(snapshotId: string) {
    return this.http.call("delete", "/v1/agents/snapshots/{snapshot_id}", { path: { snapshot_id: snapshotId } });
  }
}

export class Webhooks {
  constructor(private readonly http: HttpClient) {}

  /** Registers a URL for sandbox events; deliveries are signed with HMAC-SHA256 of the body using `secret`. */
  create(body: NonNullable<JsonBody<Operation<"post", "/v1/agents/webhooks">>>) {
    return this.http.call("post", "/v1/agents/webhooks", { body });
  }

  async list() {
    return (await this.http.call("get", "/v1/agents/webhooks", {})).webhooks;
  }

  delete(webhookId: string) {
    return this.http.call("delete", "/v1/agents/webhooks/{webhook_id}", { path: { webhook_id: webhookId } });
  }

  async deliveries(
    webhookId: string,
    query: NonNullable<QueryParams<Operation<"get", "/v1/agents/webhooks/{webhook_id}/deliveries">>> = {},
  ) {
    return (await this.http.call("get", "/v1/agents/webhooks/{webhook_id}/deliveries", { path: { webhook_id: webhookId }, query }))
      .deliveries;
  }
}
