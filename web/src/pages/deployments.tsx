// Deployments: model deployments and their replicas (GET /v1/deployments/list).
import { api } from "../api";
import { fmtTime, Table, useLoad, View } from "../ui";

interface Deployment {
  deployment_id: string;
  deployment_name: string;
  model_name: string;
  status: string;
  reason: string | null;
  created_at: string;
  hw_type: string;
  min_replicas: number;
  max_replicas: number;
  replicas: { replica_id: string; state: string }[];
  queued: number;
}

export function DeploymentsPage() {
  const list = useLoad((signal) => api<{ deployments: Deployment[] }>("/v1/deployments/list", { signal }), [], 10_000);
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
