// Usage: tokens per model per day through the gateway for this key (from GET /v1/inference/usage,
// asked once per day boundary and differenced), and runs per language (GET /v1/agents/stats).
import { useMemo } from "preact/hooks";
import { api } from "../api";
import { Empty, Table, TimeChart, useLoad, View } from "../ui";
import type { Stats, UsageList } from "../types";

type UsageRow = UsageList["usage"][number];

const DAYS = 7;
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"];

interface DayUsage {
  day: string;
  models: Map<string, UsageRow>;
}

/** Totals since each of the last DAYS midnights (UTC); a day's usage is the difference of two. */
async function perDay(signal: AbortSignal): Promise<DayUsage[]> {
  const today = new Date();
  today.setUTCHours(0, 0, 0, 0);
  const bounds = Array.from({ length: DAYS }, (_, i) => new Date(today.getTime() - (DAYS - 1 - i) * 86_400_000));
  const totals = await Promise.all(
    bounds.map((b) => api<UsageList>(`/v1/inference/usage?since=${encodeURIComponent(b.toISOString())}`, { signal })),
  );
  return bounds.map((b, i) => {
    const models = new Map<string, UsageRow>();
    const later = new Map((totals[i + 1]?.usage ?? []).map((r) => [r.model, r]));
    for (const r of totals[i]?.usage ?? []) {
      const l = later.get(r.model);
      const row = {
        model: r.model,
        prompt_tokens: r.prompt_tokens - (l?.prompt_tokens ?? 0),
        completion_tokens: r.completion_tokens - (l?.completion_tokens ?? 0),
        requests: r.requests - (l?.requests ?? 0),
      };
      if (row.requests > 0) models.set(r.model, row);
    }
    return { day: b.toISOString().slice(0, 10), models };
  });
}

function TokensChart({ days }: { days: DayUsage[] }) {
  const chart = useMemo(() => {
    const models = [...new Set(days.flatMap((d) => [...d.models.keys()]))];
    return {
      times: days.map((d) => Date.parse(d.day) / 1000),
      series: models.map((m, i) => ({
        label: m,
        values: days.map((d) => {
          const r = d.models.get(m);
          return r ? r.prompt_tokens + r.completion_tokens : 0;
        }),
        color: COLORS[i % COLORS.length] as string,
      })),
    };
  }, [days]);
  if (chart.series.length === 0) return <Empty>No tokens used through the gateway in the last {DAYS} days.</Empty>;
  return <TimeChart title="Tokens per model per day" times={chart.times} series={chart.series} />;
}

export function UsagePage() {
  const usage = useLoad(perDay, []);
  const stats = useLoad((signal) => api<Stats>("/v1/agents/stats", { signal }), []);
  return (
    <section>
      <h1>Usage</h1>
      <h2>Tokens per model per day</h2>
      <View state={usage} label="Loading token usage">
        {(days) => (
          <>
            <TokensChart days={days} />
            {days.some((d) => d.models.size > 0) ? (
              <div class="scroll">
                <table>
                  <thead>
                    <tr>
                      <th>Day (UTC)</th>
                      <th>Model</th>
                      <th>Requests</th>
                      <th>Prompt tokens</th>
                      <th>Completion tokens</th>
                    </tr>
                  </thead>
                  <tbody>
                    {days.flatMap((d) =>
                      [...d.models.values()].map((r) => (
                        <tr key={`${d.day}/${r.model}`}>
                          <td>{d.day}</td>
                          <td>{r.model}</td>
                          <td>{r.requests}</td>
                          <td>{r.prompt_tokens}</td>
                          <td>{r.completion_tokens}</td>
                        </tr>
                      )),
                    )}
                  </tbody>
                </table>
              </div>
            ) : null}
          </>
        )}
      </View>
      <h2>Runs per language</h2>
      <View state={stats} label="Loading runs">
        {(s) => (
          <Table
            rows={s.runs_by_language}
            head={["Language", "Runs", "Failed"]}
            empty="No code has run since the service started."
            scroll={false}
          >
            {(l) => (
              <tr key={l.language}>
                <td>{l.language}</td>
                <td>
                  <meter min={0} max={Math.max(...s.runs_by_language.map((x) => x.runs))} value={l.runs} /> {l.runs}
                </td>
                <td>{l.errors}</td>
              </tr>
            )}
          </Table>
        )}
      </View>
      <p class="muted">Runs are counted service-wide since the service started.</p>
    </section>
  );
}
