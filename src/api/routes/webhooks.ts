// Webhooks: register, list and delete a tenant's webhooks, and see each one's delivery attempts.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Webhook } from "../../events/webhook-store.js";
import type { WebhookService } from "../../events/webhooks.js";
import { errors } from "../schemas/common.js";
import {
  CreateWebhookBody,
  DeleteWebhookResponse,
  DeliveriesQuery,
  DeliveryList,
  WebhookIdParams,
  WebhookJson,
  WebhookList,
} from "../schemas/events.js";

const webhookJson = (h: Webhook) => ({ id: h.id, url: h.url, events: h.events, created_at: h.createdAt });

export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  const tags = ["webhooks"];

  app.post(
    "/webhooks",
    {
      schema: {
        tags,
        summary: "Register a webhook: lifecycle events are POSTed to it, signed (X-AgentBox-Signature)",
        body: CreateWebhookBody,
        response: { 201: WebhookJson, ...errors(400, 401, 429) },
      },
    },
    async (request, reply) => {
      const { hook, generatedSecret } = await webhooks.create(request.apiKey.tenantId, request.body);
      return reply.status(201).send({ ...webhookJson(hook), ...(generatedSecret ? { secret: hook.secret } : {}) });
    },
  );

  app.get(
    "/webhooks",
    { schema: { tags, summary: "List your webhooks", response: { 200: WebhookList, ...errors(401) } } },
    async (request) => ({
      webhooks: (await webhooks.list(request.apiKey.tenantId)).map(webhookJson),
    }),
  );

  app.delete(
    "/webhooks/:webhook_id",
    {
      schema: {
        tags,
        summary: "Delete a webhook (its pending deliveries are dropped)",
        params: WebhookIdParams,
        response: { 200: DeleteWebhookResponse, ...errors(401, 404) },
      },
    },
    async (request) => {
      await webhooks.delete(request.apiKey.tenantId, request.params.webhook_id);
      return { message: "Webhook deleted", id: request.params.webhook_id };
    },
  );

  app.get(
    "/webhooks/:webhook_id/deliveries",
    {
      schema: {
        tags,
        summary: "A webhook's deliveries, newest first, each with its attempts",
        params: WebhookIdParams,
        querystring: DeliveriesQuery,
        response: { 200: DeliveryList, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const limit = Math.min(500, Math.max(1, Number(request.query.limit ?? 100)));
      return { deliveries: await webhooks.deliveries(request.apiKey.tenantId, request.params.webhook_id, limit) };
    },
  );
};
