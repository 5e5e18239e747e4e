// Deployments: model deployments and their replicas (GET /v1/deployments/list), and a form that
// deploys a model (POST /v1/deployments/create), suggesting the gateway's chat models.
import { useState } from "preact/hooks";
import { api } from "../api";
import { ErrorBox, fmtTime, Table, useAction, useLoad, View } from "../ui";
import type { DeploymentList, ModelList } from "../types";

function NewDeployment({ onCreated }: { onCreated: () => void }) {
  const models = useLoad((signal) => api<ModelList>("/v1/inference/models", { signal }), []);
  // Suggestions: the gateway's chat models that are not deployments themselves. The service says
  // which of them it can deploy (a model in its models directory, or a server the operator allows).
  const offered = (models.data?.data ?? []).filter((m) => m.owned_by !== "deployment" && m.capabilities?.includes("chat")).map((m) => m.id);
  const [name, setName] = useState("");
  const [model, setModel] = useState("");
  const [min, setMin] = useState("1");
  const [max, setMax] = useState("1");
  const [busy, error, run] = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      await api("/v1/deployments/create", {
        body: {
          deployment_name: name.trim(),
          model_name: model.trim(),
          hw_type: "cpu",
          min_replicas: Number(min),
          max_replicas: Number(max),
        },
      });
      setName("");
      onCreated();
    });
  };
  return (
    <form class="row" onSubmit={submit} aria-label="New deployment">
      <label>
        Deployment name <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </label>
      <label>
        Model{" "}
        <input
          value={model}
          list="deployable-models"
          placeholder="a model in the models directory"
          onInput={(e) => setModel(e.currentTarget.value)}
          required
        />
        <datalist id="deployable-models">
          {offered.map((m) => (
            <option key={m} value={m} />
          ))}
        </datalist>
      </label>
      <label>
        Min replicas <input type="number" min="1" class="short" value={min} onInput={(e) => setMin(e.currentTarget.value)} />
      </label>
      <label>
        Max replicas <input type="number" min="1" class="short" value={max} onInput={(e) => setMax(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={busy || !name.trim() || !model.trim()}>
        {busy ? "Deploying…" : "Deploy"}
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

export function DeploymentsPage() {
  const list = useLoad((signal) => api<DeploymentList>("/v1/deployments/list", { signal }), [], 10_000);
  return (
    <section>
      <h1>Deployments</h1>
      <View state={list} label="Loading deployments">
        {(d) => (
          <Table
            rows={d.deployments}
            head={["Name", "Model", "State", "Replicas (ready / min–max)", "Queued", "Created"]}
            empty="No deployments yet: deploy a model below."
          >
            {(x) => (
              <tr key={x.deployment_id}>
                <td>{x.deployment_name}</td>
                <td>{x.model_name}</td>
                <td>
                  <span class={`badge ${x.status}`}>{x.status}</span> {x.reason ?? ""}
                </td>
                <td>
                  {x.replicas.filter((r) => r.state === "ready").length} / {x.min_replicas}–{x.max_replicas}
                </td>
                <td>{x.queued}</td>
                <td>{fmtTime(x.created_at)}</td>
              </tr>
            )}
          </Table>
        )}
      </View>
      <h2>New deployment</h2>
      <NewDeployment onCreated={list.reload} />
    </section>
  );
}
