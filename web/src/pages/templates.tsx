// Templates: the tenant's own templates (GET /v1/agents/templates, each's detail for its warm pool),
// its builds with their phase and progress (GET /v1/agents/templates/builds, polled), a build's log
// (the logs event stream, read as it comes), and delete. Builds are started from the API, the CLI
// or an SDK; the page follows them.
import { useState } from "preact/hooks";
import { api, send } from "../api";
import { ErrorBox, fmtTime, Table, useAction, useLoad, View } from "../ui";
import type { TemplateBuildList, TemplateDetail, TemplateList } from "../types";

/** Reads a build's log stream (server-sent `log` events) until its `end`, calling `line` for each line. */
async function followLog(buildId: string, line: (text: string) => void, signal: AbortSignal): Promise<void> {
  const res = await send(`/v1/agents/templates/builds/${encodeURIComponent(buildId)}/logs`, { signal });
  const reader = res.body?.getReader();
  if (!reader) return;
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "message";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
      const l = buffer.slice(0, nl).replace(/\r$/, "");
      buffer = buffer.slice(nl + 1);
      if (l.startsWith("event:")) event = l.slice(6).trim();
      else if (l.startsWith("data:") && event === "log") line((JSON.parse(l.slice(5)) as { line: string }).line);
      else if (l === "") event = "message";
    }
  }
}

function BuildLog({ buildId }: { buildId: string }) {
  const [lines, setLines] = useState<string[]>([]);
  const log = useLoad(
    async (signal) => {
      setLines([]);
      await followLog(buildId, (l) => setLines((xs) => [...xs, l]), signal);
      return true;
    },
    [buildId],
  );
  return (
    <section aria-label={`Log of build ${buildId}`}>
      <ErrorBox error={log.error} />
      <pre class="build-log">{lines.join("\n")}</pre>
    </section>
  );
}

export function TemplatesPage() {
  const templates = useLoad(
    async (signal) => {
      const list = await api<TemplateList>("/v1/agents/templates", { signal });
      const own = list.templates.filter((t) => t.visibility === "private");
      return Promise.all(own.map((t) => api<TemplateDetail>(`/v1/agents/templates/${encodeURIComponent(t.id)}`, { signal })));
    },
    [],
    5_000,
  );
  const builds = useLoad((signal) => api<TemplateBuildList>("/v1/agents/templates/builds?limit=50", { signal }), [], 2_000);
  const [shown, setShown] = useState<string | null>(null);
  const [, error, run] = useAction();
  const remove = (id: string) =>
    void run(async () => {
      await api(`/v1/agents/templates/${encodeURIComponent(id)}`, { method: "DELETE" });
      templates.reload();
      builds.reload();
    });
  return (
    <section>
      <h1>Templates</h1>
      <p class="muted">
        Your own environments: built from a Dockerfile, an image or build steps (API, <code>agentbox template build</code> or an SDK), or
        saved from a running sandbox. Create a sandbox from one by its name.
      </p>
      <ErrorBox error={error} />
      <View state={templates} label="Loading templates">
        {(list) => (
          <Table rows={list} head={["Name", "Status", "Base", "Limits", "Warm", "Created", ""]} empty="No templates of your own yet.">
            {(t) => (
              <tr key={t.id}>
                <td>
                  {t.name}
                  <div class="muted">{t.id}</div>
                </td>
                <td>
                  <span class={`badge ${t.status}`}>{t.status}</span>
                </td>
                <td>{t.base_image ?? (t.tags?.saved_from_sandbox ? `saved from ${t.tags.saved_from_sandbox}` : "—")}</td>
                <td>
                  {t.vcpu_count} vCPU, {t.memory_mb} MiB, {t.disk_size_mb} MiB disk
                </td>
                <td>{t.warm_sandboxes ?? 0}</td>
                <td>{fmtTime(t.created_at)}</td>
                <td>
                  <button type="button" class="link danger" aria-label={`Delete template ${t.name}`} onClick={() => remove(t.id)}>
                    Delete
                  </button>
                </td>
              </tr>
            )}
          </Table>
        )}
      </View>
      <h2>Builds</h2>
      <View state={builds} label="Loading builds">
        {(d) => (
          <Table rows={d.builds} head={["Template", "Status", "Phase", "Progress", "Error", "Asked", ""]} empty="No builds yet.">
            {(b) => (
              <tr key={b.build_id}>
                <td>{b.template_name}</td>
                <td>
                  <span class={`badge ${b.status}`}>{b.status}</span>
                </td>
                <td>{b.phase}</td>
                <td>
                  <progress max={100} value={b.progress_percent} aria-label={`Progress of build ${b.build_id}`} /> {b.progress_percent}%
                </td>
                <td class="meta">{b.error ?? ""}</td>
                <td>{fmtTime(b.created_at)}</td>
                <td>
                  <button type="button" class="link" onClick={() => setShown(shown === b.build_id ? null : b.build_id)}>
                    {shown === b.build_id ? "Hide log" : "Log"}
                  </button>
                </td>
              </tr>
            )}
          </Table>
        )}
      </View>
      {shown ? <BuildLog buildId={shown} /> : null}
    </section>
  );
}
