// Settings of model pulls (`agentbox models pull`): where Hugging Face sources download from.
import { defineSettings, readSettings, type Settings, settingsOf } from "../settings/kernel.js";

const setting = settingsOf("models");

export const modelsSettingsSchema = defineSettings({
  hfBaseUrl: setting.url("AGENTBOX_HF_BASE_URL", {
    table: "service",
    defaultDoc: "`https://huggingface.co`",
    doc: "Where `models pull hf:OWNER/REPO/FILE` downloads from (a mirror). `HF_TOKEN`, if set, is sent to it as a bearer token.",
  }),
});

export function modelsSettings(env: NodeJS.ProcessEnv = process.env): Settings<typeof modelsSettingsSchema> {
  return readSettings(modelsSettingsSchema, env);
}
