// Webhooks: registration per tenant (URL checked, limits), and delivery of lifecycle events as
// signed JSON POSTs, retried with exponential backoff from a queue kept in SQLite. Delivery runs in
// the background with bounded concurrency and a per-attempt time limit: it never holds up an API
// call, and a receiver that never answers takes at most its own few slots.
import crypto from "node:crypto";
import http from "node:http";
import https from "node:https";
import type { Logger } from "pino";
import { ApiError, invalid } from "../errors.js";
import { EVENT_TYPES, type EmittedEvent, type EventType } from "./bus.js";
import { DestinationError, parseWebhookUrl, resolveDestination } from "./destination.js";
import type { EventSettings } from "./settings.js";
import type { Attempt, Delivery, Webhook, WebhookStore } from "./store/webhooks.js";

export const SIGNATURE_HEADER = "X-AgentBox-Signature";
export const MIN_SECRET = 16;
export const MAX_SECRET = 256;
/** Bytes of a receiver's answer read before the connection is dropped. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * `v1=<hex HMAC-SHA256 of "<delivery id>.<timestamp>.<exact body>", keyed with the webhook's secret>`:
 * the attempt's timestamp is signed, so a receiver can refuse old (replayed) requests by age, and
 * the delivery id, which receivers drop duplicates by (the Standard Webhooks construction).
 */
export function signature(secret: string, deliveryId: string, timestamp: number, body: string): string {
  return `v1=${crypto.createHmac("sha256", secret).update(`${deliveryId}.${timestamp}.${body}`).digest("hex")}`;
}

/**
 * The delay before attempt `n + 1` after `n` failed ones: exponential (base * 2^(n-1)) up to
 * `max`, with ±20% jitter so that receivers coming back are not hit by every retry at once.
 */
export function backoffMs(n: number, base: number, max: number, random = Math.random): number {
  const raw = Math.min(max, base * 2 ** Math.max(0, n - 1));
  return Math.round(raw * (0.8 + 0.4 * random()));
}

export interface CreateWebhookInput {
  url: string;
  events: string[];
  secret?: string;
}

export interface DeliveryView {
  id: string;
  event: EventType;
  status: Delivery["state"];
  attempts: number;
  created_at: string;
  next_attempt_at: string | null;
  attempt_log: Attempt[];
}

export class WebhookService {
  private running = 0;
  private readonly perHook = new Map<string, number>();
  private readonly inFlight = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private readonly aborts = new Set<AbortController>();
  private closed = false;
  private pumping = false;
  private pumpAgain = false;
  /** Each tenant's webhooks (read at every event, changed only by create and delete). */
  private readonly cache = new Map<string, Webhook[]>();
  private readonly changeListeners = new Set<(tenantId: string) => void>();

  constructor(
    private readonly store: WebhookStore,
    private readonly settings: EventSettings,
    private readonly log: Logger,
  ) {}

  async create(tenantId: string, input: CreateWebhookInput): Promise<{ hook: Webhook; generatedSecret: boolean }> {
    let url: URL;
    try {
      url = parseWebhookUrl(input.url);
    } catch (err) {
      throw invalid((err as Error).message);
    }
    const unknown = input.events.filter((e) => !(EVENT_TYPES as readonly string[]).includes(e));
    if (unknown.length) throw invalid(`Unknown event name(s): ${unknown.slice(0, 5).join(", ")}; known: ${EVENT_TYPES.join(", ")}`);
    if (input.secret !== undefined && (input.secret.length < MIN_SECRET || input.secret.length > MAX_SECRET)) {
      throw invalid(`The secret must be ${MIN_SECRET} to ${MAX_SECRET} characters`);
    }
    // Checked early (no DNS lookup for a tenant at its limit) and again by the insert itself.
    if ((await this.store.countHooks(tenantId)) >= this.settings.webhooksPerTenant) throw this.tooMany();
    try {
      await resolveDestination(url, this.settings.webhookAllowPrivate);
    } catch (err) {
      if (err instanceof DestinationError) throw invalid(err.message);
      throw err;
    }
    const secret = input.secret ?? `whsec_${crypto.randomBytes(24).toString("base64url")}`;
    const events = [...new Set(input.events)] as EventType[];
    const hook = await this.store.addHook(tenantId, url.href, events, secret, this.settings.webhooksPerTenant);
    if (!hook) throw this.tooMany();
    this.changed(tenantId);
    return { hook, generatedSecret: input.secret === undefined };
  }

  /** Calls `listener` with the tenant whose webhooks were created or deleted here (a cluster tells the other nodes). */
  onChanged(listener: (tenantId: string) => void): void {
    this.changeListeners.add(listener);
  }

  /** Reads a tenant's webhooks (every tenant's, without one) again at its next event: they changed elsewhere. */
  forget(tenantId?: string): void {
    if (tenantId === undefined) this.cache.clear();
    else this.cache.delete(tenantId);
  }

  private changed(tenantId: string): void {
    this.cache.delete(tenantId);
    for (const listener of this.changeListeners) listener(tenantId);
  }

  private tooMany(): ApiError {
    return new ApiError(
      "quota_exceeded",
      `Your tenant already has ${this.settings.webhooksPerTenant} webhooks, its limit; delete one first`,
    );
  }

  list(tenantId: string): Promise<Webhook[]> {
    return this.store.hooksOf(tenantId);
  }

  async get(tenantId: string, id: string): Promise<Webhook> {
    const hook = await this.store.hook(tenantId, id);
    if (!hook) throw new ApiError("not_found", `Webhook '${id}' was not found`);
    return hook;
  }

  async delete(tenantId: string, id: string): Promise<void> {
    await this.get(tenantId, id);
    await this.store.deleteHook(id);
    this.changed(tenantId);
  }

  async deliveries(tenantId: string, id: string, limit: number): Promise<DeliveryView[]> {
    await this.get(tenantId, id);
    return (await this.store.deliveries(id, limit)).map((d) => ({
      id: d.id,
      event: d.event,
      status: d.state,
      attempts: d.attempts,
      created_at: new Date(d.createdAt).toISOString(),
      next_attempt_at: d.state === "pending" ? new Date(d.nextAttemptAt).toISOString() : null,
      attempt_log: d.log,
    }));
  }

  /** Queues a delivery per subscribed webhook (sending is later): one insert each, the pending cap checked
   * by each insert itself; nothing once closed. Called for every event (src/events/setup.ts). */
  async queue(event: EmittedEvent): Promise<void> {
    if (this.closed) return;
    let hooks = this.cache.get(event.tenantId);
    if (!hooks) {
      hooks = await this.store.hooksOf(event.tenantId);
      this.cache.set(event.tenantId, hooks);
    }
    const now = Date.now();
    let queued = false;
    for (const hook of hooks) {
      if (!hook.events.includes(event.type)) continue;
      const id = `dlv_${crypto.randomUUID()}`;
      const payload = JSON.stringify({
        id,
        webhook_id: hook.id,
        type: event.type,
        sandbox_id: event.sandboxId,
        at: event.at,
        reason: event.type === "ended" ? event.reason : null,
        detail: { ...event.detail, ...(event.type === "ended" && event.by ? { by: event.by } : {}) },
      });
      const base = { id, webhookId: hook.id, tenantId: hook.tenantId, event: event.type, payload, createdAt: now };
      const refusal = {
        at: new Date(now).toISOString(),
        status_code: null,
        error: "not sent: too many deliveries pending for this webhook",
        duration_ms: 0,
      };
      // The receiver far behind: the event is recorded as not delivered rather than queued without end.
      if ((await this.store.enqueue(base, this.settings.webhookQueuePerHook, refusal)) === "pending") queued = true;
    }
    if (queued) this.schedule(now);
  }

  /** Starts delivering (the queue left by an earlier run included) and trims old history now and then. */
  start(): void {
    this.schedule(Date.now());
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const ac of this.aborts) ac.abort();
    for (let i = 0; this.running > 0 && i < 200; i++) await new Promise((r) => setTimeout(r, 10));
  }

  /** Makes sure a pump runs at `at` (or sooner). */
  private schedule(at: number): void {
    if (this.closed || at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        void this.pump();
      },
      Math.max(0, at - Date.now()),
    );
    this.timer.unref();
  }

  /** One pump at a time: a wake-up while one runs makes it go round once more. */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        await this.pumpOnce();
      } while (this.pumpAgain && !this.closed);
    } catch (err) {
      this.log.warn({ err }, "webhooks: delivery queue not read");
      this.schedule(Date.now() + 1000);
    } finally {
      this.pumping = false;
    }
  }

  private async pumpOnce(): Promise<void> {
    if (this.closed) return;
    const now = Date.now();
    // Webhooks at their share are left out of the query: a backlog of one never keeps the others
    // waiting (a few rounds, since one batch may fill a webhook's share).
    for (let round = 0; round < 4 && this.running < this.settings.webhookConcurrency; round++) {
      const full = [...this.perHook].filter(([, n]) => n >= this.settings.webhookConcurrencyPerHook).map(([id]) => id);
      const batch = await this.store.due(now, this.settings.webhookConcurrency - this.running, full);
      if (batch.length === 0) break;
      for (const d of batch) {
        if (this.running >= this.settings.webhookConcurrency) break;
        if (this.inFlight.has(d.id)) continue;
        const used = this.perHook.get(d.webhookId) ?? 0;
        if (used >= this.settings.webhookConcurrencyPerHook) continue;
        this.inFlight.add(d.id);
        this.perHook.set(d.webhookId, used + 1);
        this.running += 1;
        void this.attempt(d).finally(() => {
          this.inFlight.delete(d.id);
          const left = (this.perHook.get(d.webhookId) ?? 1) - 1;
          if (left > 0) this.perHook.set(d.webhookId, left);
          else this.perHook.delete(d.webhookId);
          this.running -= 1;
          this.schedule(Date.now());
        });
      }
    }
    // Due work left (slots full) is picked up when an attempt finishes; otherwise wake at the next due time.
    const next = await this.store.nextDue();
    if (next !== undefined && next > now) this.schedule(next);
    else if (next !== undefined && this.running === 0) this.schedule(now + 1000);
  }

  private async attempt(d: Delivery): Promise<void> {
    const hook = await this.store.hook(d.tenantId, d.webhookId);
    if (!hook) return;
    const n = d.attempts + 1;
    const retryAt =
      Date.now() + this.settings.webhookTimeoutMs + backoffMs(n, this.settings.webhookRetryBaseMs, this.settings.webhookRetryMaxMs);
    // Taken and written before sending: a crash during the attempt leaves the delivery to be retried,
    // not lost; and of several nodes that read it as due, only the one that takes it sends it.
    if (!(await this.store.claim(d.id, d.attempts, retryAt))) return;
    d.attempts = n;
    d.nextAttemptAt = retryAt;
    const started = Date.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      statusCode = await this.send(hook, d);
      if (statusCode < 200 || statusCode >= 300) error = `HTTP ${statusCode}`;
    } catch (err) {
      error = (err as Error).message.slice(0, 300);
    }
    if (this.closed && error) return; // shutting down: the saved retry time stands
    d.log.push({ at: new Date(started).toISOString(), status_code: statusCode, error, duration_ms: Date.now() - started });
    if (!error) d.state = "delivered";
    else {
      const wait = backoffMs(n, this.settings.webhookRetryBaseMs, this.settings.webhookRetryMaxMs);
      if (Date.now() + wait - d.createdAt > this.settings.webhookRetryWindowMs) d.state = "failed";
      else d.nextAttemptAt = Date.now() + wait;
    }
    if (await this.store.hook(d.tenantId, d.webhookId)) await this.store.save(d);
    if (error)
      this.log.info({ webhook_id: hook.id, delivery_id: d.id, attempt: n, error, final: d.state === "failed" }, "webhook delivery failed");
  }

  /** One POST to the webhook, to the address just checked; resolves with the HTTP status. */
  private async send(hook: Webhook, d: Delivery): Promise<number> {
    const url = new URL(hook.url);
    let dest: { address: string; family: 4 | 6 };
    try {
      dest = await resolveDestination(url, this.settings.webhookAllowPrivate);
    } catch (err) {
      throw err instanceof DestinationError ? new Error(`refused: ${err.message}`) : err;
    }
    const ac = new AbortController();
    this.aborts.add(ac);
    const timer = setTimeout(() => ac.abort(), this.settings.webhookTimeoutMs);
    try {
      return await new Promise<number>((resolve, reject) => {
        const body = Buffer.from(d.payload);
        const timestamp = Math.floor(Date.now() / 1000);
        const req = (url.protocol === "https:" ? https : http).request(
          url,
          {
            method: "POST",
            signal: ac.signal,
            agent: false,
            // Connect to the address that was checked; TLS still verifies the URL's host name.
            lookup: (_host, opts, cb) => {
              if ((opts as { all?: boolean }).all) (cb as (e: null, a: { address: string; family: number }[]) => void)(null, [dest]);
              else cb(null, dest.address, dest.family);
            },
            headers: {
              "content-type": "application/json",
              "content-length": body.length,
              "user-agent": "AgentBox-Webhooks/1",
              "x-agentbox-event": d.event,
              "x-agentbox-delivery": d.id,
              "x-agentbox-timestamp": String(timestamp),
              [SIGNATURE_HEADER.toLowerCase()]: signature(hook.secret, d.id, timestamp, d.payload),
            },
          },
          (res) => {
            // Only the status matters: the body is read (to free the socket) but not kept, and a
            // receiver that answers with a flood is cut off.
            let seen = 0;
            res.on("data", (chunk: Buffer) => {
              seen += chunk.length;
              if (seen > MAX_ANSWER_BYTES) {
                res.destroy();
                resolve(res.statusCode ?? 0);
              }
            });
            res.on("end", () => resolve(res.statusCode ?? 0));
            res.on("error", reject);
          },
        );
        // The time limit settles the attempt whatever state the request is in (even a response
        // that stalls after its headers).
        const late = () => reject(new Error(`no answer within ${this.settings.webhookTimeoutMs} ms`));
        ac.signal.addEventListener("abort", late, { once: true });
        req.on("error", (err) => (ac.signal.aborted ? late() : reject(err)));
        req.on("close", () => reject(new Error("the connection closed before the answer ended")));
        req.end(body);
      });
    } finally {
      clearTimeout(timer);
      this.aborts.delete(ac);
    }
  }
}
