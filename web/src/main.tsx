// The dashboard's shell: sign-in with an API key (kept in sessionStorage only), the navigation,
// and a hash router to the pages. An operator (the admin key) gets the admin pages.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { identify, storedKey, storeKey } from "./api";
import { DeploymentsPage } from "./pages/deployments";
import { FilesPage } from "./pages/files";
import { KeysPage } from "./pages/keys";
import { ModelsPage } from "./pages/models";
import { OverviewPage } from "./pages/overview";
import { endPlaygroundSandbox, PlaygroundPage } from "./pages/playground";
import { SandboxDetail, SandboxesPage } from "./pages/sandboxes";
import { TemplatesPage } from "./pages/templates";
import { UsagePage } from "./pages/usage";
import { VectorsPage } from "./pages/vectors";
import { ErrorBox } from "./ui";
import "./style.css";

type Role = "operator" | "tenant";
const ROLE_ITEM = "agentbox.role";

interface Page {
  path: string;
  name: string;
  roles: Role[];
}

const PAGES: Page[] = [
  { path: "overview", name: "Overview", roles: ["operator", "tenant"] },
  { path: "sandboxes", name: "Sandboxes", roles: ["tenant"] },
  { path: "playground", name: "Playground", roles: ["tenant"] },
  { path: "templates", name: "Templates", roles: ["tenant"] },
  { path: "keys", name: "Keys", roles: ["operator"] },
  { path: "usage", name: "Usage", roles: ["tenant"] },
  { path: "models", name: "Models", roles: ["tenant"] },
  { path: "vectors", name: "Vectors", roles: ["tenant"] },
  { path: "files", name: "Files", roles: ["tenant"] },
  { path: "deployments", name: "Deployments", roles: ["tenant"] },
];

function useHash(): string[] {
  const read = () => location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const [parts, setParts] = useState(read);
  useEffect(() => {
    const on = () => setParts(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return parts;
}

function SignIn({ onSignedIn }: { onSignedIn: (role: Role) => void }) {
  const [key, setKey] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const role = await identify(key.trim());
      storeKey(key.trim());
      sessionStorage.setItem(ROLE_ITEM, role);
      onSignedIn(role);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>AgentBox</h1>
      <p class="muted">
        Sign in with an API key, or with the admin key to manage keys and tenants. The key stays in this browser tab only.
      </p>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          required
        />
        <button type="submit" disabled={busy || !key.trim()}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <ErrorBox error={error} />
    </main>
  );
}

function App() {
  const [role, setRole] = useState<Role | null>(() => (storedKey() ? ((sessionStorage.getItem(ROLE_ITEM) as Role | null) ?? null) : null));
  const [page = "", ...rest] = useHash();
  if (!role) return <SignIn onSignedIn={setRole} />;
  const pages = PAGES.filter((p) => p.roles.includes(role));
  const current = pages.find((p) => p.path === page) ?? pages[0];
  const signOut = () => {
    endPlaygroundSandbox(); // while the key is still there to kill it with
    storeKey(null);
    sessionStorage.removeItem(ROLE_ITEM);
    setRole(null);
    location.hash = "";
  };
  let body = <OverviewPage operator={role === "operator"} />;
  switch (current?.path) {
    case "sandboxes":
      body = rest[0] ? <SandboxDetail id={rest[0]} /> : <SandboxesPage />;
      break;
    case "playground":
      body = <PlaygroundPage />;
      break;
    case "templates":
      body = <TemplatesPage />;
      break;
    case "keys":
      body = <KeysPage />;
      break;
    case "usage":
      body = <UsagePage />;
      break;
    case "models":
      body = <ModelsPage />;
      break;
    case "vectors":
      body = <VectorsPage />;
      break;
    case "files":
      body = <FilesPage />;
      break;
    case "deployments":
      body = <DeploymentsPage />;
      break;
  }
  return (
    <div class="shell">
      <header>
        <span class="brand">AgentBox</span>
        <nav aria-label="Pages">
          {pages.map((p) => (
            <a key={p.path} href={`#/${p.path}`} aria-current={p === current ? "page" : undefined}>
              {p.name}
            </a>
          ))}
        </nav>
        <span class="who">{role === "operator" ? "operator" : "API key"}</span>
        <button type="button" class="link" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main">{body}</main>
    </div>
  );
}

render(<App />, document.getElementById("app") as HTMLElement);
