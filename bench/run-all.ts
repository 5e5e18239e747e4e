// `npm run bench`: every benchmark, one after another, each printing its table.
import { benchCodeRun } from "./code-run.js";

await benchCodeRun();
