// /v1/deployments (create, list, get, delete) and /v1/accelerators: thin adapters over
// src/deployments/ (DeploymentService, Accelerators).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Accelerators } from "./accelerators.js";
import type { DeploymentService } from "./service.js";
import { errors } from "../api/schemas/common.js";
import {
  AcceleratorList,
  CreateDeploymentBody,
  CreateDeploymentResult,
  DeleteDeploymentResult,
  DeploymentIdParams,
  DeploymentItem,
  DeploymentList,
} from "./schemas.js";

export interface DeploymentRouteDeps {
  deployments: DeploymentService;
  accelerators: Accelerators;
}

export const deploymentRoutes: FastifyPluginAsyncTypebox<{ deps: DeploymentRouteDeps }> = async (app, { deps }) => {
  const { deployments, accelerators } = deps;
  const tags = ["deployments"];

  app.post(
    "/deployments/create",
    {
      schema: {
        tags,
        summary: "Create a deployment",
        description:
          "Serves a model with its own replica processes (between min_replicas and max_replicas) behind the gateway: " +
          "clients send `model: <deployment_name>` to /v1/inference/chat/completions. Answers at once with status 'creating'.",
        body: CreateDeploymentBody,
        response: { 200: CreateDeploymentResult, ...errors(400, 401, 404, 409, 429, 503) },
      },
    },
    async (request) => deployments.create(request.apiKey.tenantId, request.body),
  );

  app.get(
    "/deployments/list",
    {
      schema: { tags, summary: "List deployments", response: { 200: DeploymentList, ...errors(401) } },
    },
    async (request) => ({ deployments: await deployments.list(request.apiKey.tenantId) }),
  );

  app.get(
    "/deployments/:deployment_id",
    {
      schema: {
        tags,
        summary: "Get a deployment",
        description: "Its status (and why it failed), bounds, replicas and queue.",
        params: DeploymentIdParams,
        response: { 200: DeploymentItem, ...errors(401, 404) },
      },
    },
    async (request) => deployments.get(request.apiKey.tenantId, request.params.deployment_id),
  );

  app.delete(
    "/deployments/delete/:deployment_id",
    {
      schema: {
        tags,
        summary: "Delete a deployment",
        description:
          "The gateway stops routing its name at once; requests already running or queued finish, then its replicas stop and it is gone.",
        params: DeploymentIdParams,
        response: { 200: DeleteDeploymentResult, ...errors(401, 404) },
      },
    },
    async (request) => deployments.delete(request.apiKey.tenantId, request.params.deployment_id),
  );

  app.get(
    "/accelerators",
    {
      schema: {
        tags: ["accelerators"],
        summary: "This host's hardware for deployments",
        description: "The CPU (model, cores, memory) and NVIDIA GPUs (from nvidia-smi, when present).",
        response: { 200: AcceleratorList, ...errors(401) },
      },
    },
    async () => ({ accelerators: await accelerators.list() }),
  );
};
