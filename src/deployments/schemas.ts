// Schemas of /v1/deployments and /v1/accelerators (shapes of the hosted API's clients).
import { Type } from "@sinclair/typebox";

export const CreateDeploymentBody = Type.Object(
  {
    deployment_name: Type.String({
      minLength: 1,
      maxLength: 64,
      description: "Unique per tenant; the `model` clients send to the gateway",
    }),
    model_name: Type.String({
      minLength: 1,
      maxLength: 256,
      description: "A pulled GGUF model (GET /v1/inference/models lists them), or a model the operator allowed a server command for",
    }),
    hw_type: Type.Optional(Type.String({ maxLength: 32, description: "'cpu' (default), 'gpu' or 'dedicated'" })),
    gpu_model: Type.Optional(
      Type.String({ maxLength: 128, description: "A GPU of this host (GET /v1/accelerators); absent or empty for CPU" }),
    ),
    gpu_count: Type.Optional(Type.Integer({ minimum: 0, maximum: 64 })),
    min_replicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024, description: "Replicas always running (default 1)" })),
    max_replicas: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1024, description: "Most replicas under load (default min_replicas)" }),
    ),
  },
  { additionalProperties: true },
);

/** The fields a created deployment and a listed one share: when it was made and what it runs on. */
const DeploymentShape = {
  created_at: Type.String({ format: "date-time" }),
  hw_type: Type.String(),
  gpu_model: Type.Union([Type.String(), Type.Null()]),
  gpu_count: Type.Integer(),
  min_replicas: Type.Integer(),
  max_replicas: Type.Integer(),
};

export const CreateDeploymentResult = Type.Object({
  deployment_id: Type.String(),
  message: Type.String(),
  status: Type.String({ description: "'creating' at first; then 'running', or 'failed' with a reason" }),
  deployment_name: Type.String(),
  user_email: Type.Null(),
  model_name: Type.String(),
  ...DeploymentShape,
});

const ReplicaInfo = Type.Object({
  replica_id: Type.String(),
  state: Type.String({ description: "starting, ready, restarting, stopping, stopped or failed" }),
  pid: Type.Union([Type.Integer(), Type.Null()]),
  in_flight: Type.Integer(),
  restarts: Type.Integer({ description: "Times the replica's process was started again after it died or stopped answering" }),
});

export const DeploymentItem = Type.Object({
  deployment_id: Type.String(),
  deployment_name: Type.String(),
  user_email: Type.Union([Type.String(), Type.Null()]),
  model_name: Type.String(),
  status: Type.String({ description: "creating, running, failed or deleting" }),
  reason: Type.Union([Type.String(), Type.Null()], { description: "Why the deployment failed" }),
  ...DeploymentShape,
  node_id: Type.Union([Type.String(), Type.Null()], {
    description: "The node that runs its replicas (AGENTBOX_NODE_ID); in a cluster, another node once that one is lost",
  }),
  replicas: Type.Array(ReplicaInfo),
  queued: Type.Integer({ description: "Requests waiting for a free replica now" }),
});

export const DeploymentList = Type.Object({ deployments: Type.Array(DeploymentItem) });

export const DeploymentIdParams = Type.Object({ deployment_id: Type.String({ minLength: 1, maxLength: 128 }) });

export const DeleteDeploymentResult = Type.Object({
  message: Type.String(),
  deployment_id: Type.String(),
  status: Type.String({ description: "'deleting': running requests finish, then the replicas stop" }),
});

export const AcceleratorList = Type.Object({
  accelerators: Type.Array(
    Type.Object({
      accelerator_id: Type.String({ description: "'cpu', or 'gpu-<index>'" }),
      hw_type: Type.String({ description: "'cpu' or 'gpu'" }),
      hw_model: Type.String(),
      hw_link: Type.String(),
      hw_memory: Type.Integer({ description: "GiB" }),
      count: Type.Integer({ description: "Cores for the CPU; 1 per GPU" }),
      pricing: Type.Number(),
      provider: Type.String(),
      status: Type.String(),
      updated_at: Type.String({ format: "date-time" }),
    }),
  ),
});
