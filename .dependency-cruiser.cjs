// The floor plan's import rules (docs/design.md, "The floor plan"), checked by `npm run deps` in
// `npm test`. Floors, lowest first: the kernel, the stores, the areas' domain services, the areas'
// routes, the HTTP kernel and app, main. Each floor imports only downward. The rules name folders by
// pattern: every area is one folder, src/<area>/.

/** An area's own files: its routes, schemas, services, store and settings (every folder of src/ but the kernel's, src/api/ and src/cli/). */
const AREA =
  "^src/(sandbox|network|events|files|deployments|inference|vectors|models|e2b|tenancy|templates|stats|dashboard|cluster)/";

/** The kernel floor: errors, settings, shared utilities, workers, the databases (SQLite, PostgreSQL) and their migrations. */
const KERNEL = "^src/(errors\\.ts|config\\.ts|fd-limit\\.ts|workers\\.ts|settings/|common/|store/(db|pg|persistence)\\.ts)";

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import cycles, type-only imports included: a cycle makes two modules one, and fixes no floor for them.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "kernel-imports-no-area",
      comment: "The kernel floor imports nothing above it: no area, nothing from src/api/.",
      severity: "error",
      from: { path: KERNEL },
      to: { path: [AREA, "^src/api/"] },
    },
    {
      name: "http-kernel-imports-no-area",
      comment: "The HTTP kernel (src/api/ less app.ts and services.ts, which register the areas) imports no area's files.",
      severity: "error",
      from: { path: "^src/api/", pathNot: "^src/api/(app|services)\\.ts$" },
      to: { path: AREA },
    },
    {
      name: "nothing-imports-main-or-cli",
      comment: "src/main.ts and the CLI are the top: started, never imported (the CLI's own files import each other).",
      severity: "error",
      from: { pathNot: "^src/cli/" },
      to: { path: ["^src/main\\.ts$", "^src/cli/"] },
    },
    {
      name: "src-imports-no-tests",
      comment: "The service never imports its tests or benchmarks.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(test|bench)/" },
    },
    {
      name: "entry-files-are-started-not-imported",
      comment: "A *-main.ts file is a worker or process entry, started by its path (src/workers.ts): importing it would run it.",
      severity: "error",
      from: {},
      to: { path: "-main\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports count: a floor is a floor for types too.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
