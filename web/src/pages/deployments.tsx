// Deployments: model deployments and their replicas (GET /v1/deployments/list).
import { api } from "../api";
import { fmtTime, Table, useLoad, View } from "../ui";
import type { DeploymentList } from "../types";

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
            empty="No deployments (POST /v1/deployments/create makes one)."
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
    </section>
  );
}
