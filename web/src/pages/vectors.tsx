// Vectors: the indexes of this tenant (GET /v1/vectors/indexes), a form that creates one, texts added
// to an index (embedded by the gateway: POST /v1/vectors/{index}/text/batch) and a text search in one.
import { useState } from "preact/hooks";
import { api } from "../api";
import { Empty, ErrorBox, Select, Table, useAction, useLoad, View } from "../ui";
import type { IndexList, SearchResult } from "../types";

/** The dimension of the gateway's default embedding model, so a new index fits the texts it embeds. */
const DEFAULT_DIMENSION = "512";

function NewIndex({ onCreated }: { onCreated: (name: string) => void }) {
  const [name, setName] = useState("");
  const [dimension, setDimension] = useState(DEFAULT_DIMENSION);
  const [metric, setMetric] = useState("cosine");
  const [busy, error, run] = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      await api("/v1/vectors/indexes", { body: { name: name.trim(), dimension: Number(dimension), metric } });
      onCreated(name.trim());
      setName("");
    });
  };
  return (
    <form class="row" onSubmit={submit} aria-label="New index">
      <label>
        Index name <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </label>
      <label>
        Dimension{" "}
        <input type="number" min="1" max="2000" class="short" value={dimension} onInput={(e) => setDimension(e.currentTarget.value)} />
      </label>
      <Select label="Metric" value={metric} options={["cosine", "euclidean", "dotproduct"]} onChange={setMetric} />
      <button type="submit" disabled={busy || !name.trim()}>
        {busy ? "Creating…" : "Create index"}
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

function AddText({ index, onAdded }: { index: string; onAdded: () => void }) {
  const [id, setId] = useState("");
  const [text, setText] = useState("");
  const [done, setDone] = useState("");
  const [busy, error, run] = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      await api(`/v1/vectors/${encodeURIComponent(index)}/text/batch`, { body: { vectors: [{ id: id.trim(), text }] } });
      setDone(`Added '${id.trim()}' to ${index}.`);
      setId("");
      setText("");
      onAdded();
    });
  };
  return (
    <form class="row" onSubmit={submit} aria-label="Add a text">
      <label>
        Vector id <input value={id} onInput={(e) => setId(e.currentTarget.value)} required class="short" />
      </label>
      <label class="grow">
        Text <input value={text} onInput={(e) => setText(e.currentTarget.value)} required />
      </label>
      <button type="submit" disabled={busy || !index || !id.trim() || !text.trim()}>
        {busy ? "Adding…" : "Add text"}
      </button>
      {done ? <span class="muted">{done}</span> : null}
      <ErrorBox error={error} />
    </form>
  );
}

export function VectorsPage() {
  const indexes = useLoad((signal) => api<IndexList>("/v1/vectors/indexes", { signal }), []);
  const [index, setIndex] = useState("");
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState<SearchResult["hits"]>();
  const [busy, error, run] = useAction();
  const chosen = index || indexes.data?.indexes[0]?.name || "";
  const search = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const r = await api<SearchResult>(`/v1/vectors/${encodeURIComponent(chosen)}/search/text`, {
        body: { query, top_k: 10, include_metadata: true },
      });
      setHits(r.hits);
    });
  };
  return (
    <section>
      <h1>Vectors</h1>
      <View state={indexes} label="Loading indexes">
        {(d) => (
          <Table
            rows={d.indexes}
            head={["Index", "Dimension", "Metric", "Vectors"]}
            empty="No vector indexes yet: create one below."
            scroll={false}
          >
            {(i) => (
              <tr key={i.id}>
                <td>{i.name}</td>
                <td>{i.dimension}</td>
                <td>{i.metric}</td>
                <td>{i.vector_count ?? "—"}</td>
              </tr>
            )}
          </Table>
        )}
      </View>
      <h2>New index</h2>
      <NewIndex
        onCreated={(name) => {
          setIndex(name);
          indexes.reload();
        }}
      />
      <h2>Add a text</h2>
      <p class="muted">
        The gateway embeds it with its default model ({DEFAULT_DIMENSION} dimensions) into <strong>{chosen || "—"}</strong>, the index
        chosen under Search.
      </p>
      <AddText index={chosen} onAdded={indexes.reload} />
      <h2>Search</h2>
      <form class="row" onSubmit={search}>
        <Select label="Index" value={chosen} options={(indexes.data?.indexes ?? []).map((i) => i.name)} onChange={setIndex} />
        <label class="grow">
          Query text <input value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy || !chosen || !query.trim()}>
          Search
        </button>
      </form>
      <ErrorBox error={error} />
      {hits ? (
        hits.length === 0 ? (
          <Empty>No matches.</Empty>
        ) : (
          <ol class="hits">
            {hits.map((h) => (
              <li key={h.id}>
                <code>{h.id}</code> <span class="muted">{h.score.toFixed(4)}</span> {h.metadata ? JSON.stringify(h.metadata) : ""}
              </li>
            ))}
          </ol>
        )
      ) : null}
    </section>
  );
}
