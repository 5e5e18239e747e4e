// Code contexts: extra isolated kernels inside one sandbox, each with its own language, globals
// and working directory. Held in memory: a context is a live process and ends with its sandbox.
import crypto from "node:crypto";
import { ApiError } from "../errors.js";
import type { Language } from "./languages.js";

export interface CodeContext {
  id: string;
  sandboxId: string;
  language: Language;
  cwd: string;
  /** The supervisor's name for this context's kernel. */
  kernel: string;
  createdAt: string;
}

export class ContextRegistry {
  private readonly bySandbox = new Map<string, Map<string, CodeContext>>();

  constructor(private readonly maxPerSandbox: number) {}

  add(sandboxId: string, language: Language, cwd: string): CodeContext {
    let contexts = this.bySandbox.get(sandboxId);
    if (!contexts) {
      contexts = new Map();
      this.bySandbox.set(sandboxId, contexts);
    }
    if (contexts.size >= this.maxPerSandbox) {
      throw new ApiError("invalid_state", `A sandbox may hold at most ${this.maxPerSandbox} code contexts; delete one first`);
    }
    const id = crypto.randomUUID();
    const context = { id, sandboxId, language, cwd, kernel: `ctx:${id}`, createdAt: new Date().toISOString() };
    contexts.set(id, context);
    return context;
  }

  get(sandboxId: string, contextId: string): CodeContext {
    const context = this.bySandbox.get(sandboxId)?.get(contextId);
    if (!context) throw new ApiError("context_not_found", `Code context '${contextId}' was not found in this sandbox`);
    return context;
  }

  list(sandboxId: string): CodeContext[] {
    return [...(this.bySandbox.get(sandboxId)?.values() ?? [])];
  }

  remove(sandboxId: string, contextId: string): CodeContext {
    const context = this.get(sandboxId, contextId);
    this.bySandbox.get(sandboxId)?.delete(contextId);
    return context;
  }

  /** Forgets every context of a sandbox that ended (its kernels ended with it). A stable function: pass it as a listener. */
  readonly dropSandbox = (sandboxId: string): void => {
    this.bySandbox.delete(sandboxId);
  };
}
