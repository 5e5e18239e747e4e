// Deployments: model deployments and their replicas (GET /v1/deployments/list).
import { api } from "../api";
import { Empty, fmtTime, useLoad, View } from "../ui";

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
        {(d) =>
          d.deployments.length === 0 ? (
            <Empty>No deployments (POST /v1/deployments/create makes one).</Empty>
          ) : (
            <div class="scroll">
              <table>
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Model</th>
                    <th>State</th>
                    <th>Replicas (ready / min–max)</th>
                    <th>Queued</th>
                    <th>Created</th>
                  </tr>
                </thead>
                <tbody>
                  {d.deployments.map((x) => (
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
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </View>
    </section>
  );
}
