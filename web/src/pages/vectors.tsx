// Vectors: the indexes of this tenant (GET /v1/vectors/indexes) and a text search in one of them.
import { useState } from "preact/hooks";
import { api } from "../api";
import { Empty, ErrorBox, Select, Table, useAction, useLoad, View } from "../ui";
import type { IndexList, SearchResult } from "../types";

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
            empty="No vector indexes yet (POST /v1/vectors/indexes creates one)."
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
