// The Helm chart (deploy/helm/agentbox), rendered offline with its default values and with the
// cluster-shaped example (deploy/helm/cluster-values.yaml): every object it produces is validated
// against the Kubernetes API schemas (kubernetes-models), and what a working cluster needs is
// checked: probes on the health endpoint, the disruption budgets selecting the right pods, the
// autoscaler driving the API Deployment, the database, Redis, S3 and secrets reaching the nodes.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { DockerfileParser } from "dockerfile-ast";
import { type RenderedObject, readValues, renderChart, type Values } from "../helpers/helm.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CHART = path.join(ROOT, "deploy/helm/agentbox");
const CLUSTER_VALUES = readValues(path.join(ROOT, "deploy/helm/cluster-values.yaml"));
const DEFAULT_VALUES = readValues(path.join(CHART, "values.yaml"));

type Obj = Record<string, unknown>;
interface Container {
  name: string;
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } } }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    privileged?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type: string };
  };
  volumeMounts?: { name: string; mountPath: string }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
}
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    containers: Container[];
    volumes?: { name: string; emptyDir?: object }[];
    nodeSelector?: Record<string, string>;
    tolerations?: Obj[];
  };
}

/** Validates one object against its kind's schema; an apiVersion or kind without one fails. */
async function validate(rendered: RenderedObject): Promise<void> {
  const { apiVersion, kind } = rendered.object;
  assert.equal(typeof apiVersion, "string", `${rendered.template}: no apiVersion`);
  assert.equal(typeof kind, "string", `${rendered.template}: no kind`);
  let models: Record<string, unknown>;
  try {
    models = await import(`kubernetes-models/${apiVersion}`);
  } catch {
    assert.fail(`${rendered.template}: no schema for apiVersion ${apiVersion}`);
  }
  const Model = models[kind as string] as (new (data: Obj) => { validate(): void }) | undefined;
  assert.ok(Model, `${rendered.template}: no schema for ${apiVersion} ${kind}`);
  try {
    new Model(rendered.object).validate();
  } catch (err) {
    assert.fail(`${rendered.template} (${kind}): ${(err as Error).message}`);
  }
}

async function renderValid(values?: Values): Promise<RenderedObject[]> {
  const { objects, notes } = await renderChart(CHART, { releaseName: "ab", namespace: "agents", values });
  for (const o of objects) await validate(o);
  // What `helm install` prints names the release's own Service and admin Secret.
  assert.match(notes, /port-forward service\/ab-api /);
  return objects;
}

function find(objects: RenderedObject[], kind: string, name: string): Obj {
  const found = objects.filter((o) => o.object.kind === kind && (o.object.metadata as Obj).name === name);
  assert.equal(found.length, 1, `one ${kind} ${name}, got ${found.length}`);
  return (found[0] as RenderedObject).object;
}

const spec = (o: Obj) => o.spec as Obj;
const podTemplate = (workload: Obj) => spec(workload).template as PodTemplate;
const container = (workload: Obj) => podTemplate(workload).spec.containers[0] as Container;
const env = (c: Container, name: string) => c.env?.find((e) => e.name === name);
const selects = (selector: Obj, labels: Record<string, string>) =>
  Object.entries(selector.matchLabels as Record<string, string>).every(([k, v]) => labels[k] === v);

/** What a working cluster needs from the chart, whichever values rendered it. */
function assertEssentials(objects: RenderedObject[], values: Values): void {
  const secrets = (values.secrets ?? {}) as Record<string, { name: string; key: string } | undefined>;
  const api = find(objects, "Deployment", "ab-api");
  const executor = find(objects, "StatefulSet", "ab-executor");

  for (const [workload, role] of [
    [api, "api"],
    [executor, "executor"],
  ] as const) {
    const c = container(workload);
    // Probes: on the health endpoint, through the container's named port.
    const portNames = new Set(c.ports?.map((p) => p.name));
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
      assert.equal(probe?.httpGet?.path, "/health", `${role}: a probe on /health`);
      assert.ok(portNames.has(String(probe?.httpGet?.port)), `${role}: probe port is a container port`);
    }
    assert.ok(c.resources?.requests?.cpu && c.resources.requests.memory, `${role}: cpu and memory requests`);
    // Settings: the role, the node's own address, PostgreSQL, Redis and both secrets by reference.
    assert.equal(env(c, "AGENTBOX_NODE_ROLES")?.value, role);
    assert.equal(env(c, "AGENTBOX_HOST")?.value, "0.0.0.0", `${role}: listens on the pod's address, not loopback`);
    assert.equal(env(c, "AGENTBOX_NODE_ID")?.valueFrom?.fieldRef?.fieldPath, "metadata.name");
    const dataMount = c.volumeMounts?.find((m) => m.name === "data");
    assert.equal(env(c, "AGENTBOX_DATA_DIR")?.value, dataMount?.mountPath, `${role}: the data dir is the mounted volume`);
    const names = c.env?.map((e) => e.name) ?? [];
    assert.ok(names.indexOf("AGENTBOX_POD_IP") < names.indexOf("AGENTBOX_NODE_URL"), "the pod IP is defined before the URL using it");
    assert.match(env(c, "AGENTBOX_NODE_URL")?.value ?? "", /^http:\/\/\$\(AGENTBOX_POD_IP\):\d+$/);
    // The internal routes on their own port of the pod's address, advertised as such.
    assert.equal(env(c, "AGENTBOX_INTERNAL_HOST")?.value, "$(AGENTBOX_POD_IP)");
    assert.equal(env(c, "AGENTBOX_INTERNAL_URL")?.value, `http://$(AGENTBOX_POD_IP):${env(c, "AGENTBOX_INTERNAL_PORT")?.value}`);
    assert.notEqual(env(c, "AGENTBOX_INTERNAL_PORT")?.value, env(c, "AGENTBOX_PORT")?.value);
    for (const [variable, ref] of [
      ["AGENTBOX_DATABASE_URL", secrets.databaseUrl],
      ["AGENTBOX_REDIS_URL", secrets.redisUrl],
      ["AGENTBOX_CLUSTER_SECRET", secrets.clusterSecret],
      ["AGENTBOX_ADMIN_KEY", secrets.adminKey],
    ] as const) {
      const e = env(c, variable);
      assert.equal(e?.value, undefined, `${role}: ${variable} never written in plain`);
      assert.deepEqual(e?.valueFrom?.secretKeyRef, ref, `${role}: ${variable} from its Secret`);
    }
  }
  // Executors run sandboxes; API nodes open no sandbox host (docs/cluster.md) and get no privilege.
  assert.equal(container(executor).securityContext?.privileged, true);
  const apiSecurity = container(api).securityContext;
  assert.equal(apiSecurity?.privileged, false);
  assert.equal(apiSecurity?.allowPrivilegeEscalation, false);
  assert.deepEqual(apiSecurity?.capabilities, { drop: ["ALL"] });
  assert.equal(apiSecurity?.seccompProfile?.type, "RuntimeDefault");
  const apiPod = podTemplate(api);
  assert.equal(JSON.stringify(apiPod).includes("apparmor.security.beta.kubernetes.io"), false, "no AppArmor exception for API pods");

  // The disruption budgets select their role's pods and not the other's.
  const executorLabels = podTemplate(executor).metadata.labels;
  const apiLabels = podTemplate(api).metadata.labels;
  const executorPdb = find(objects, "PodDisruptionBudget", "ab-executor");
  assert.ok(selects(spec(executorPdb).selector as Obj, executorLabels), "executor PDB selects the executor pods");
  assert.ok(!selects(spec(executorPdb).selector as Obj, apiLabels), "executor PDB leaves the API pods alone");
  assert.ok(selects(spec(executor).selector as Obj, executorLabels), "the StatefulSet selects its own pods");
  const apiPdb = find(objects, "PodDisruptionBudget", "ab-api");
  assert.ok(selects(spec(apiPdb).selector as Obj, apiLabels) && !selects(spec(apiPdb).selector as Obj, executorLabels));

  // The API Service reaches API pods only; the executors' Service is headless (no balancing).
  const service = find(objects, "Service", "ab-api");
  assert.ok(
    selects({ matchLabels: spec(service).selector }, apiLabels) && !selects({ matchLabels: spec(service).selector }, executorLabels),
  );
  assert.equal(spec(find(objects, "Service", "ab-executor")).clusterIP, "None");
  assert.equal(spec(executor).serviceName, "ab-executor");
}

test("default values: every object is a valid Kubernetes object, with what a cluster needs", async () => {
  const objects = await renderValid();
  assert.deepEqual(objects.map((o) => `${o.object.kind}/${(o.object.metadata as Obj).name}`).sort(), [
    "Deployment/ab-api",
    "HorizontalPodAutoscaler/ab-api",
    "PodDisruptionBudget/ab-api",
    "PodDisruptionBudget/ab-executor",
    "Service/ab-api",
    "Service/ab-executor",
    "StatefulSet/ab-executor",
  ]);
  for (const o of objects) assert.equal((o.object.metadata as Obj).namespace, "agents");
  assertEssentials(objects, DEFAULT_VALUES);

  // The autoscaler drives the API Deployment, which then leaves its replica count to it.
  const api = find(objects, "Deployment", "ab-api");
  const hpa = find(objects, "HorizontalPodAutoscaler", "ab-api");
  assert.deepEqual(spec(hpa).scaleTargetRef, { apiVersion: "apps/v1", kind: "Deployment", name: "ab-api" });
  assert.equal(spec(api).replicas, undefined);
  // Without S3 settings the files stay on each node's disk: no S3 variables at all.
  assert.equal(env(container(api), "AGENTBOX_FILES_BACKEND"), undefined);
  // The data dir of executors is a volume claim per executor.
  const executor = find(objects, "StatefulSet", "ab-executor");
  assert.equal((spec(executor).volumeClaimTemplates as Obj[]).length, 1);
});

test("cluster-shaped values: valid objects, S3 and extra settings on every node, executors on their own machines", async () => {
  const objects = await renderValid(CLUSTER_VALUES);
  assertEssentials(objects, CLUSTER_VALUES);
  const api = find(objects, "Deployment", "ab-api");
  const executor = find(objects, "StatefulSet", "ab-executor");
  for (const workload of [api, executor]) {
    const c = container(workload);
    assert.equal(env(c, "AGENTBOX_FILES_BACKEND")?.value, "s3");
    assert.equal(env(c, "AGENTBOX_S3_BUCKET")?.value, "agentbox");
    assert.equal(env(c, "AGENTBOX_S3_ENDPOINT")?.value, "http://minio.storage.svc:9000");
    assert.equal(env(c, "AGENTBOX_S3_FORCE_PATH_STYLE")?.value, "true");
    assert.deepEqual(env(c, "AGENTBOX_S3_SECRET_ACCESS_KEY")?.valueFrom?.secretKeyRef, {
      name: "agentbox-minio",
      key: "secret-access-key",
    });
    // A number in `env` becomes the string a container variable must be.
    assert.equal(env(c, "AGENTBOX_SANDBOXES_MEMORY_MB")?.value, "24576");
    assert.equal(env(c, "AGENTBOX_PUBLIC_URL")?.value, "https://agentbox.example.com");
    assert.equal(c.resources?.limits?.memory, workload === api ? "2Gi" : "28Gi");
  }
  assert.equal(container(api).ports?.[0]?.containerPort, 8080);
  const pod = podTemplate(executor).spec;
  assert.deepEqual(pod.nodeSelector, { "agentbox.dev/executor": "true" });
  assert.deepEqual(pod.tolerations, [{ key: "agentbox.dev/executor", operator: "Equal", effect: "NoSchedule", value: "true" }]);
  const [claim] = spec(executor).volumeClaimTemplates as { spec: Obj }[];
  assert.equal(claim?.spec.storageClassName, "fast-ssd");
  const hpa = find(objects, "HorizontalPodAutoscaler", "ab-api");
  assert.equal(spec(hpa).minReplicas, 3);
  assert.equal(spec(hpa).maxReplicas, 20);
});

test("without autoscaling the Deployment keeps its replica count; without persistence executors get an emptyDir", async () => {
  const objects = await renderValid({
    api: { autoscaling: { enabled: false }, replicas: 4 },
    executor: { persistence: { enabled: false } },
  });
  assert.equal(
    objects.find((o) => o.object.kind === "HorizontalPodAutoscaler"),
    undefined,
  );
  assert.equal(spec(find(objects, "Deployment", "ab-api")).replicas, 4);
  const executor = find(objects, "StatefulSet", "ab-executor");
  assert.equal(spec(executor).volumeClaimTemplates, undefined);
  assert.deepEqual(podTemplate(executor).spec.volumes, [{ name: "data", emptyDir: {} }]);
});

test("validation bites: values that make an invalid object fail, and so does a misspelled value", async () => {
  // A port that is not a number renders `containerPort: http`, which the schema refuses.
  await assert.rejects(renderValid({ port: "http" }), /containerPort must be integer/);
  // A resource quantity that is not one.
  await assert.rejects(renderValid({ api: { resources: { requests: { cpu: "lots" } } } }), /quantity/);
  // A value the templates read but the values do not have: an error, not an empty field.
  await assert.rejects(renderValid({ secrets: { redisUrl: null } }), /redisUrl/);
});

test("the probes' endpoint is the one the service serves without a key", () => {
  const values = DEFAULT_VALUES as { probes: { path: string } };
  const app = fs.readFileSync(path.join(ROOT, "src/api/app.ts"), "utf8");
  const auth = fs.readFileSync(path.join(ROOT, "src/api/auth.ts"), "utf8");
  assert.ok(app.includes(`app.get("${values.probes.path}"`), `src/api/app.ts serves ${values.probes.path}`);
  assert.ok(auth.includes(`/^\\${values.probes.path}$/`), `${values.probes.path} is public in src/api/auth.ts`);
});

test("the image recipe matches the chart: Debian 12, Node at /usr/bin/node, setup run, same port and data dir", () => {
  const containerfile = DockerfileParser.parse(fs.readFileSync(path.join(ROOT, "deploy/Containerfile"), "utf8"));
  const values = DEFAULT_VALUES as { port: number };
  const froms = containerfile.getFROMs();
  assert.equal(`${froms.at(-1)?.getImageName()}:${froms.at(-1)?.getImageTag()}`, "debian:bookworm-slim");
  const args = (keyword: string) =>
    containerfile
      .getInstructions()
      .filter((i) => i.getKeyword() === keyword)
      .map((i) => i.getArgumentsContent() ?? "");
  // Sandboxes run /usr/bin/node from the image's /usr (their /usr/local is masked).
  assert.ok(args("COPY").some((a) => a.endsWith(" /usr/bin/node")));
  assert.ok(args("RUN").some((a) => a.startsWith("npm run setup")));
  assert.deepEqual(args("EXPOSE"), [String(values.port)]);
  const env = args("ENV").join(" ");
  assert.match(env, new RegExp(`AGENTBOX_PORT=${values.port}\\b`));
  // The directory both workloads mount their data volume on.
  assert.match(env, /AGENTBOX_DATA_DIR=\/var\/lib\/agentbox\b/);
});
