// Image references (`[registry/]repository[:tag|@digest]`): parsed, checked against the operator's
// allow-list of registries, and turned into skopeo's transport names.
import { ApiError } from "../errors.js";

export interface ImageRef {
  /** Lower-case registry host[:port]; docker.io for a name without one. */
  registry: string;
  repository: string;
  /** `:tag` or `@sha256:...`. */
  reference: string;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const REGISTRY = /^[a-z0-9.-]+(?::[0-9]{1,5})?$/;

export function parseImageRef(text: string): ImageRef {
  const bad = (why: string) => new ApiError("invalid_request", `docker_image '${text}' is not an image reference: ${why}`);
  if (text.length > 512 || /\s/.test(text)) throw bad("too long or contains spaces");
  let rest = text;
  let reference = ":latest";
  const at = rest.indexOf("@");
  if (at >= 0) {
    const digest = rest.slice(at + 1);
    if (!DIGEST.test(digest)) throw bad("a digest must be sha256:<64 hex>");
    reference = `@${digest}`;
    rest = rest.slice(0, at);
  }
  const slash = rest.lastIndexOf("/");
  const colon = rest.lastIndexOf(":");
  if (colon > slash) {
    const tag = rest.slice(colon + 1);
    if (!TAG.test(tag)) throw bad("invalid tag");
    if (at < 0) reference = `:${tag}`;
    rest = rest.slice(0, colon);
  }
  const parts = rest.split("/");
  let registry = "docker.io";
  const first = parts[0] ?? "";
  if (parts.length > 1 && (first.includes(".") || first.includes(":") || first === "localhost")) {
    registry = first.toLowerCase();
    parts.shift();
  }
  if (!REGISTRY.test(registry)) throw bad("invalid registry");
  if (registry === "docker.io" && parts.length === 1) parts.unshift("library");
  if (parts.length === 0 || !parts.every((p) => COMPONENT.test(p))) throw bad("invalid repository name");
  return { registry, repository: parts.join("/"), reference };
}

/** The reference as skopeo's docker:// transport takes it. */
export function dockerTransport(ref: ImageRef): string {
  return `docker://${ref.registry}/${ref.repository}${ref.reference}`;
}

export function checkAllowed(ref: ImageRef, allowed: string[]): void {
  if (!allowed.includes(ref.registry)) {
    throw new ApiError(
      "invalid_request",
      `Images from registry '${ref.registry}' are not allowed here (the operator allows: ${allowed.join(", ") || "none"}; AGENTBOX_TEMPLATE_REGISTRIES)`,
    );
  }
}
