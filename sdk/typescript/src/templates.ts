// Tenants' own templates as the SDK shows them: builds (from an image, build steps or a Dockerfile),
// their status and streamed log, cancelling one, get/list/delete, and waiting for a build to end. A sandbox is
// created from a template with `ab.sandboxes.create({template: idOrName})`; a running sandbox
// becomes a template with `sandbox.saveAsTemplate(name)`.
import type { Answer, HttpClient, JsonBody, Operation } from "./http.js";
import { readEvents } from "./sse.js";

export type BuildTemplateParams = NonNullable<JsonBody<Operation<"post", "/v1/agents/templates/build">>>;
export type TemplateBuildStatus = Answer<Operation<"get", "/v1/agents/templates/builds/{build_id}/status">>;
export type TemplateDetail = Answer<Operation<"get", "/v1/agents/templates/{template_id}">>;
/** One line of a build's log. */
export interface BuildLogLine {
  n: number;
  at: string;
  line: string;
}

export class Templates {
  constructor(private readonly http: HttpClient) {}

  /** Starts a build (202 at once): follow it with `status`, `logs` or `waitForBuild`. */
  build(body: BuildTemplateParams) {
    return this.http.call("post", "/v1/agents/templates/build", { body });
  }

  /** The built-ins, then this tenant's ready templates (the nine keys each). */
  list() {
    return this.http.call("get", "/v1/agents/templates", {});
  }

  /** One template by id or name (any state), with its status, last build and warm pool size. */
  get(idOrName: string): Promise<TemplateDetail> {
    return this.http.call("get", "/v1/agents/templates/{template_id}", { path: { template_id: idOrName } });
  }

  delete(idOrName: string) {
    return this.http.call("delete", "/v1/agents/templates/{template_id}", { path: { template_id: idOrName } });
  }

  status(buildId: string): Promise<TemplateBuildStatus> {
    return this.http.call("get", "/v1/agents/templates/builds/{build_id}/status", { path: { build_id: buildId } });
  }

  /**
   * Cancels a build that waits or runs (its tools and build sandbox killed); answers once it has
   * ended, with its status (`cancelled`). 409 when it has ended already.
   */
  cancel(buildId: string): Promise<TemplateBuildStatus> {
    return this.http.call("delete", "/v1/agents/templates/builds/{build_id}", { path: { build_id: buildId } });
  }

  /** The build's log lines, those so far and then each new one, until the build ends. */
  async *logs(buildId: string, opts: { signal?: AbortSignal } = {}): AsyncGenerator<BuildLogLine> {
    const res = await this.http.send("get", "/v1/agents/templates/builds/{build_id}/logs", {
      path: { build_id: buildId },
      timeoutMs: 86_400_000,
      ...opts,
    });
    if (!res.body) return;
    for await (const ev of readEvents(res.body)) {
      if (ev.event === "end") return;
      if (ev.event === "log") yield JSON.parse(ev.data) as BuildLogLine;
    }
  }

  /** Polls the build until it completes, fails or is cancelled; returns its last status (a failed one says why in `error`). */
  async waitForBuild(buildId: string, opts: { intervalMs?: number; timeoutMs?: number } = {}): Promise<TemplateBuildStatus> {
    const end = Date.now() + (opts.timeoutMs ?? 3_600_000);
    for (;;) {
      const s = await this.status(buildId);
      if (s.status === "completed" || s.status === "failed" || s.status === "cancelled") return s;
      if (Date.now() > end) throw new Error(`template build ${buildId} did not end in time (last: ${s.phase}, ${s.progress_percent}%)`);
      await new Promise((r) => setTimeout(r, opts.intervalMs ?? 500));
    }
  }
}
