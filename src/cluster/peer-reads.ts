// Reads that every node answers for itself (a tenant's activity numbers: each node counts the runs
// and sandboxes it serves), gathered from the other nodes of the cluster: the same request sent to
// each node whose lease holds, signed on the internal channel, all at once and each within a short
// timeout; a node that does not answer in time is named, never waited for past it.
import { ApiError } from "../errors.js";
import type { ChannelAuth } from "./channel-auth.js";
import type { Membership } from "./membership.js";

export interface PeerAnswers<T> {
  /** The answers of the nodes that gave one (status 200), in no particular order. */
  answers: T[];
  /** The ids of the nodes asked that did not answer in time, or answered with an error. */
  missing: string[];
}

export class PeerReads {
  constructor(
    private readonly membership: Membership,
    private readonly channel: ChannelAuth,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Whether the request was sent by another node (a valid channel signature): it is then answered
   * with this node's own numbers, not gathered again. A request claiming to be one with a wrong
   * signature is refused.
   */
  fromPeer(headers: Record<string, string | string[] | undefined>, method: string, url: string): boolean {
    const channel = this.channel.verify(headers, method, url);
    if (channel === "invalid") throw new ApiError("unauthorized", "A forwarded request's node signature is invalid or too old");
    return channel === "valid";
  }

  /** GET `url` (a path) with the client's `authorization` on every other node up or draining. */
  async ask<T>(url: string, authorization: string): Promise<PeerAnswers<T>> {
    const { answers, missing } = await this.askEach<T>(url, authorization);
    return { answers: answers.map((a) => a.answer), missing };
  }

  /** As ask(), with each answer's node (in the order of the node ids). */
  async askEach<T>(url: string, authorization: string): Promise<PeerAnswers<{ node: string; answer: T }>> {
    const self = this.membership.self.id;
    const nodes = this.membership.nodes().filter((n) => n.id !== self && (n.state === "up" || n.state === "draining"));
    const answers: { node: string; answer: T }[] = [];
    const missing: string[] = [];
    await Promise.all(
      nodes.map(async (node) => {
        try {
          const res = await fetch(new URL(url, node.url), {
            headers: { authorization, ...this.channel.sign("GET", url) },
            signal: AbortSignal.timeout(this.timeoutMs),
          });
          if (res.status !== 200) throw new Error(`status ${res.status}`);
          answers.push({ node: node.id, answer: (await res.json()) as T });
        } catch {
          missing.push(node.id);
        }
      }),
    );
    answers.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
    missing.sort();
    return { answers, missing };
  }
}
