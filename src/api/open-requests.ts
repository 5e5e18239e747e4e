// Requests that stay open for long (event streams, file transfers, connections relayed to a
// sandbox's port), by the API key that opened them: revoking the key ends them at once instead of
// at their own end. One Map entry per such request, added when it starts and removed when it ends;
// short requests are never registered.
import type { ApiError } from "../errors.js";

/** Whose request it is: the API key it was made with (for a share link, the key that made the link). */
export interface Holder {
  keyId: string;
  tenantId: string;
}

/** Ends a held request; `why` says why when it is not the key's revocation (a tenant's suspension). */
export type End = (why?: ApiError) => void;

interface Held {
  keyId: string;
  tenantId: string;
  end: End;
}

function endOne(held: Held, why?: ApiError): void {
  try {
    held.end(why);
  } catch {
    // One request failing to end must not keep the others open; its socket is gone or going anyway.
  }
}

export class OpenRequests {
  private readonly byKey = new Map<string, Set<Held>>();

  /** Registers an open request; `end` ends it early. Returns the release, to call when it ends by itself. */
  hold(holder: Holder, end: End): () => void {
    const held: Held = { keyId: holder.keyId, tenantId: holder.tenantId, end };
    let set = this.byKey.get(held.keyId);
    if (!set) {
      set = new Set();
      this.byKey.set(held.keyId, set);
    }
    set.add(held);
    return () => this.release(held);
  }

  /** Ends every open request of the key; how many there were. */
  endKey(keyId: string): number {
    const set = this.byKey.get(keyId);
    if (!set) return 0;
    this.byKey.delete(keyId);
    for (const held of set) endOne(held);
    return set.size;
  }

  /** Ends every open request of every key of the tenant (it was suspended); how many there were. */
  endTenant(tenantId: string, why: ApiError): number {
    let n = 0;
    for (const [keyId, set] of this.byKey) {
      for (const held of set) {
        if (held.tenantId !== tenantId) continue;
        set.delete(held);
        endOne(held, why);
        n += 1;
      }
      if (set.size === 0) this.byKey.delete(keyId);
    }
    return n;
  }

  /** Open requests registered now (all keys). */
  get size(): number {
    let n = 0;
    for (const set of this.byKey.values()) n += set.size;
    return n;
  }

  private release(held: Held): void {
    const set = this.byKey.get(held.keyId);
    if (!set?.delete(held)) return;
    if (set.size === 0) this.byKey.delete(held.keyId);
  }
}

/**
 * Holds a request open under `holder` until `closable` (its response or socket) closes; revoking
 * the key (or suspending its tenant) calls `end`. `isActive` is asked once after registering: a key
 * revoked (or a tenant suspended) between the request's authentication and this call (a port
 * connection may take seconds to open) ends it too.
 */
export function holdUntilClosed(
  open: OpenRequests,
  holder: Holder,
  closable: { readonly closed: boolean; once(event: "close", listener: () => void): unknown },
  end: End,
  isActive: (keyId: string) => boolean | Promise<boolean>,
): void {
  if (closable.closed) return;
  const release = open.hold(holder, end);
  closable.once("close", release);
  const stop = () => {
    release();
    end();
  };
  const active = isActive(holder.keyId);
  if (typeof active === "boolean") {
    if (!active) stop();
    return;
  }
  // A key whose state cannot be read is treated as revoked.
  active.then((yes) => yes || stop(), stop);
}
