// `npm run bench`: every benchmark, one after another, each printing its table.
import { benchCodeRun } from "./code-run.js";
import { benchDensity } from "./density.js";

await benchCodeRun();
await benchDensity();
