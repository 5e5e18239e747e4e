// Regenerates the TypeScript SDK's types (sdk/typescript/src/openapi.ts) from the OpenAPI document
// the service serves, which is itself generated from the schemas that validate requests.
// `npm run sdk:types` starts the service on a loopback port, reads /openapi.json and writes the file;
// a test compares the committed file with a fresh rendering, so the SDK cannot drift from the API.
import fs from "node:fs";
import path from "node:path";
import openapiTS, { astToString } from "openapi-typescript";

export const SDK_TYPES_FILE = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../sdk/typescript/src/openapi.ts");

export async function renderSdkTypes(doc: object): Promise<string> {
  // openapi-typescript reads the document as given; a copy keeps the caller's object untouched.
  const ast = await openapiTS(structuredClone(doc) as Parameters<typeof openapiTS>[0]);
  return astToString(ast);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const { startServer } = await import("../test/helpers/server.js");
  const server = await startServer({ env: { AGENTBOX_WARM_POOL: "0" } });
  try {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as object;
    fs.writeFileSync(SDK_TYPES_FILE, await renderSdkTypes(doc));
    console.log(`wrote ${path.relative(process.cwd(), SDK_TYPES_FILE)}`);
  } finally {
    await server.dispose();
  }
}
