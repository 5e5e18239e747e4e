// The E2B-compatible API's settings: the domain its host-name routing serves (src/e2b/hosts.ts).
import { defineSettings, readSettings, type Settings, settingsOf } from "../settings/kernel.js";
import { e2bDomain } from "./hosts.js";

const e2b = settingsOf("e2b");

export const e2bSettingsSchema = defineSettings({
  e2bDomain: e2b.custom("AGENTBOX_E2B_DOMAIN", {
    table: "requests",
    default: undefined as string | undefined,
    defaultDoc: "(none)",
    parse: e2bDomain,
    doc: "E2B's sandbox domain (e.g. `e2b.agentbox.example.com`, or `e2b.localhost:8443` with a port): the E2B control API answers it as `domain`, and requests whose `Host` is `{port}-{sandboxID}.{domain}` (envd 49983, the code interpreter 49999, any other port through the port relay) or `api.{domain}` (the control API) are served. The SDKs then need only `E2B_DOMAIN` and `E2B_API_KEY`; they speak HTTPS to these names, so wildcard DNS and a TLS front with a wildcard certificate that keeps the `Host` header are the operator's. Unset: no host-name routing (nothing is checked per request). See [e2b.md](e2b.md#host-names-e2b_domain).",
  }),
});

export type E2bSettings = Settings<typeof e2bSettingsSchema>;

export function e2bSettings(env: NodeJS.ProcessEnv = process.env): E2bSettings {
  return readSettings(e2bSettingsSchema, env);
}
