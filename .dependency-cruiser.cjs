// The floor plan's import rules (docs/design.md, "The floor plan"), checked by `npm run deps` in
// `npm test`. Floors, lowest first: the kernel, the stores, the areas' domain services, the areas'
// routes, the HTTP kernel and app, main. Each floor imports only downward. The rules name folders by
// pattern, so they keep holding when files move into one folder per area (src/<area>/...).

/** An area's own files: its routes, schemas, services, store and settings. */
const AREA = "^src/(sandbox|network|events|files|deployments|inference|vectors|models|e2b|tenancy|templates|cluster)/";
/** Areas' files that still live under shared folders until they move into their area's folder. */
const AREA_IN_SHARED_FOLDERS = "^src/(store/(?!db\\.ts$)|api/(routes|schemas)/)";
/**
 * Known violations, to remove when keys and tenants move into src/tenancy/: the HTTP kernel's key
 * check (auth.ts), its per-key rate limit (rate-limit.ts) and its suspended-tenant filter
 * (suspensions.ts) take the key and tenant stores' types (src/store/keys.ts, key-directory.ts,
 * tenant-directory.ts, tenants.ts).
 * The move settles which side those types live on; until then only these imports are let through.
 */
const KNOWN_HTTP_KERNEL_TO_TENANCY = "^src/api/(auth|rate-limit|suspensions)\\.ts$";
const TENANCY_STORES = "^src/store/(keys|key-directory|tenants|tenant-directory)\\.ts$";

/** The kernel floor: errors, settings, shared utilities, workers, the database and its migrations. */
const KERNEL = "^src/(errors\\.ts|config\\.ts|fd-limit\\.ts|workers\\.ts|settings/|common/|store/db\\.ts|db/)";

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
      comment: "The kernel floor imports nothing above it: no area, no store of an area, nothing from src/api/.",
      severity: "error",
      from: { path: KERNEL },
      to: { path: [AREA, AREA_IN_SHARED_FOLDERS, "^src/api/"] },
    },
    {
      name: "http-kernel-imports-no-area",
      comment:
        "The HTTP kernel (src/api/ less app.ts and services.ts, which register the areas) imports no area's files; " +
        "the areas' routes and schemas still under src/api/ are areas' files, not the kernel.",
      severity: "error",
      from: { path: "^src/api/", pathNot: ["^src/api/(app\\.ts|services\\.ts|routes/|schemas/)", KNOWN_HTTP_KERNEL_TO_TENANCY] },
      to: { path: [AREA, AREA_IN_SHARED_FOLDERS] },
    },
    {
      name: "http-kernel-imports-no-area-known",
      comment: "The same rule for the files with known violations: everything but the tenancy stores' types is still refused.",
      severity: "error",
      from: { path: KNOWN_HTTP_KERNEL_TO_TENANCY },
      to: { path: [AREA, AREA_IN_SHARED_FOLDERS], pathNot: TENANCY_STORES },
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
