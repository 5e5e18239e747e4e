// Keys (the operator): create a key — its secret shown once, with a copy button —, the keys with
// their last use, revoke; tenants and their quotas (the /v1/admin API).
import { useState } from "preact/hooks";
import { api } from "../api";
import { Empty, ErrorBox, fmtTime, Table, useAction, useLoad, View } from "../ui";
import type { KeyList, TenantList } from "../types";

const QUOTAS = ["max_sandboxes", "max_concurrent_runs", "memory_mb", "max_processes", "storage_mb"] as const;

function NewKey({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState("");
  const [tenant, setTenant] = useState("");
  const [rate, setRate] = useState("");
  const [secret, setSecret] = useState<string>();
  const [copied, setCopied] = useState(false);
  const [busy, error, run] = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const body: Record<string, unknown> = { name: name.trim() };
      if (tenant.trim()) body.tenant_id = tenant.trim();
      if (rate.trim()) body.rate_limit_per_minute = Number(rate);
      const created = await api<{ key: string }>("/v1/admin/keys", { body });
      setSecret(created.key);
      setCopied(false);
      setName("");
      onCreated();
    });
  };
  return (
    <>
      <form class="row" onSubmit={submit} aria-label="New key">
        <label>
          Key name <input value={name} onInput={(e) => setName(e.currentTarget.value)} required maxLength={128} />
        </label>
        <label>
          Tenant <input value={tenant} placeholder="new tenant" onInput={(e) => setTenant(e.currentTarget.value)} />
        </label>
        <label>
          Requests/min <input type="number" min="1" class="short" value={rate} onInput={(e) => setRate(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy || !name.trim()}>
          Create key
        </button>
      </form>
      <ErrorBox error={error} />
      {secret ? (
        <div class="secret" role="status">
          <p>The new key, shown this once only: store it now.</p>
          <code data-testid="new-key">{secret}</code>{" "}
          <button
            type="button"
            onClick={() =>
              void navigator.clipboard.writeText(secret).then(
                () => setCopied(true),
                () => setCopied(false),
              )
            }
          >
            {copied ? "Copied" : "Copy"}
          </button>{" "}
          <button type="button" class="link" onClick={() => setSecret(undefined)}>
            Done
          </button>
        </div>
      ) : null}
    </>
  );
}

function TenantRow({ tenant, onSaved }: { tenant: TenantList["tenants"][number]; onSaved: () => void }) {
  const [values, setValues] = useState(() => Object.fromEntries(QUOTAS.map((q) => [q, tenant.quotas[q]?.toString() ?? ""])));
  const [busy, error, run] = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const body = Object.fromEntries(QUOTAS.map((q) => [q, values[q]?.trim() ? Number(values[q]) : null]));
      await api(`/v1/admin/tenants/${encodeURIComponent(tenant.tenant_id)}`, { method: "PUT", body });
      onSaved();
    });
  };
  return (
    <form class="tenant" onSubmit={save} aria-label={`Quotas of ${tenant.tenant_id}`}>
      <h3>
        {tenant.tenant_id} <span class="muted">{tenant.active_keys} active keys</span>
      </h3>
      <div class="row">
        {QUOTAS.map((q) => (
          <label key={q}>
            {q.replaceAll("_", " ")}{" "}
            <input
              type="number"
              min="0"
              class="short"
              placeholder={`${tenant.effective[q] ?? "∞"}`}
              value={values[q]}
              onInput={(e) => setValues({ ...values, [q]: e.currentTarget.value })}
            />
          </label>
        ))}
        <button type="submit" disabled={busy}>
          Save quotas
        </button>
      </div>
      <ErrorBox error={error} />
    </form>
  );
}

export function KeysPage() {
  const keys = useLoad((signal) => api<KeyList>("/v1/admin/keys", { signal }), []);
  const tenants = useLoad((signal) => api<TenantList>("/v1/admin/tenants", { signal }), []);
  const [busy, error, run] = useAction();
  const reload = () => {
    keys.reload();
    tenants.reload();
  };
  return (
    <section>
      <h1>Keys</h1>
      <NewKey onCreated={reload} />
      <ErrorBox error={error} />
      <View state={keys} label="Loading keys">
        {(d) => (
          <Table rows={d.keys} head={["Name", "Prefix", "Tenant", "Created", "Last used", "State"]} empty="No API keys yet.">
            {(k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.tenant_id}</td>
                <td>{fmtTime(k.created_at)}</td>
                <td>{k.last_used_at ? fmtTime(k.last_used_at) : "never"}</td>
                <td>
                  {k.revoked_at ? (
                    <span class="badge terminated">revoked</span>
                  ) : (
                    <button
                      type="button"
                      class="danger"
                      disabled={busy}
                      aria-label={`Revoke ${k.name}`}
                      onClick={() => {
                        if (!confirm(`Revoke the key '${k.name}'? Clients using it are refused from the next request on.`)) return;
                        void run(async () => {
                          await api(`/v1/admin/keys/${encodeURIComponent(k.id)}`, { method: "DELETE" });
                          reload();
                        });
                      }}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            )}
          </Table>
        )}
      </View>
      <h2>Tenants and quotas</h2>
      <p class="muted">Empty fields use the service's default (shown greyed). Quotas apply to all of a tenant's keys together.</p>
      <View state={tenants} label="Loading tenants">
        {(d) =>
          d.tenants.length === 0 ? (
            <Empty>No tenants yet: create a key.</Empty>
          ) : (
            d.tenants.map((t) => <TenantRow key={`${t.tenant_id}:${JSON.stringify(t.quotas)}`} tenant={t} onSaved={tenants.reload} />)
          )
        }
      </View>
    </section>
  );
}
