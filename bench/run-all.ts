// `npm run bench`: every benchmark, one after another, each printing its table. The 60 s load run
// is separate (`npm run bench:load`).
import { benchCodeRun } from "./code-run.js";
import { benchDataImport } from "./data-import.js";
import { benchDensity } from "./density.js";
import { benchEgress } from "./egress.js";
import { benchDeployments } from "./deployments.js";
import { benchE2b } from "./e2b.js";
import { benchFiles, benchStoredFiles } from "./files.js";
import { benchGateway } from "./gateway.js";
import { benchSnapshots } from "./snapshots.js";
import { benchStreaming } from "./streaming.js";
import { benchTemplates } from "./templates.js";
import { benchVectors } from "./vectors.js";

await benchCodeRun();
await benchStreaming();
await benchDensity();
await benchDataImport();
await benchFiles();
await benchStoredFiles();
await benchSnapshots();
await benchEgress();
await benchGateway();
await benchDeployments();
await benchVectors();
await benchE2b();
await benchTemplates();
