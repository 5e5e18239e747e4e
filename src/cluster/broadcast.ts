// Pub/sub for what every node must hear at once: a key revoked, a tenant changed (quotas,
// suspension) or a tenant's webhooks changed through one node's API is applied by every other
// node's caches within a round trip to Redis. The node that made the change acted already; it ignores its own message.
import type { Redis } from "ioredis";
import * as K from "./keys.js";

export type Message =
  | { type: "key_revoked"; key: string }
  | { type: "tenant_changed"; tenant: string }
  | { type: "webhooks_changed"; tenant: string };

export interface Receivers {
  keyRevoked(idOrPrefix: string): void;
  tenantChanged(tenantId: string): Promise<void>;
  webhooksChanged(tenantId: string): void;
}

export class Broadcast {
  constructor(
    private readonly pub: Redis,
    private readonly sub: Redis,
    private readonly selfId: string,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Subscribes; resolves once Redis confirmed the subscription. */
  async listen(receivers: Receivers): Promise<void> {
    this.sub.on("message", (channel: string, raw: string) => {
      if (channel !== K.BUS) return;
      let msg: Message & { from: string };
      try {
        msg = JSON.parse(raw);
      } catch (err) {
        this.onError(err);
        return;
      }
      if (msg.from === this.selfId) return;
      if (msg.type === "key_revoked") receivers.keyRevoked(msg.key);
      else if (msg.type === "tenant_changed") receivers.tenantChanged(msg.tenant).catch(this.onError);
      else if (msg.type === "webhooks_changed") receivers.webhooksChanged(msg.tenant);
    });
    await this.sub.subscribe(K.BUS);
  }

  send(msg: Message): void {
    this.pub.publish(K.BUS, JSON.stringify({ ...msg, from: this.selfId })).catch(this.onError);
  }
}
