// Shared pieces of every page: loading data with its three states, error and empty messages,
// a time chart (uPlot), and small formatters.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { ApiError, send } from "./api";

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload: () => void;
}

/** Loads once and whenever `deps` change (and every `pollMs` if given); keeps the last data while reloading. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], pollMs?: number): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    const ctl = new AbortController();
    setLoading(true);
    load(ctl.signal).then(
      (d) => {
        if (ctl.signal.aborted) return;
        setData(d);
        setError(undefined);
        setLoading(false);
      },
      (e: Error) => {
        if (ctl.signal.aborted) return;
        setError(e);
        setLoading(false);
      },
    );
    const timer = pollMs ? setTimeout(reload, pollMs) : undefined;
    return () => {
      ctl.abort();
      clearTimeout(timer);
    };
  }, [...deps, tick]);
  return { data, error, loading, reload };
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error as Error;
  const code = e instanceof ApiError ? e.code : undefined;
  return (
    <p class="error" role="alert">
      {code ? <code>{code}</code> : null} {e.message}
    </p>
  );
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p class="muted" aria-live="polite" aria-busy="true">
      {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** The three states of loaded data around the view of it. */
export function View<T>({ state, children, label }: { state: Loaded<T>; label?: string; children: (data: T) => ComponentChildren }) {
  if (state.data === undefined) return state.error ? <ErrorBox error={state.error} /> : <Loading what={label} />;
  return (
    <>
      {state.error ? <ErrorBox error={state.error} /> : null}
      {children(state.data)}
    </>
  );
}

export interface Series {
  label: string;
  values: (number | null)[];
  color: string;
}

/** A line chart of series over time (seconds since the epoch), resized with its box. */
export function TimeChart({ times, series, title, height = 220 }: { times: number[]; series: Series[]; title: string; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(240, el.clientWidth),
      height,
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2 }))],
      axes: [{}, { size: 50 }],
      legend: { show: true },
    };
    plot.current?.destroy();
    plot.current = new uPlot(opts, [times, ...series.map((s) => s.values)], el);
    const ro = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(240, el.clientWidth), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [times, series, height]);
  return <figure class="chart" ref={box} role="img" aria-label={title} />;
}

export const fmtTime = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : "—");

export function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = -1;
  do {
    v /= 1024;
    i++;
  } while (v >= 1024 && i < units.length - 1);
  return `${v.toFixed(1)} ${units[i]}`;
}

/** A button that runs an async action, disabled while it runs, with its error shown under it. */
export function useAction(): [boolean, unknown, (fn: () => Promise<void>) => Promise<void>, (e: unknown) => void] {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = useCallback(async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await fn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }, []);
  return [busy, error, run, setError];
}

/** Fetches `path` (authenticated) and saves the answer as the file `name` in the browser. */
export async function download(path: string, name: string): Promise<void> {
  const res = await send(path);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * A table of `rows` under its column heads (`""` for a head left blank), in a box that scrolls
 * sideways unless `scroll` is false; `empty` is shown instead when there are no rows.
 */
export function Table<T>({
  rows,
  head,
  empty,
  scroll = true,
  children,
}: {
  rows: T[];
  head: string[];
  empty: ComponentChildren;
  scroll?: boolean;
  children: (row: T) => ComponentChildren;
}) {
  if (rows.length === 0) return <Empty>{empty}</Empty>;
  const table = (
    <table>
      <thead>
        <tr>
          {head.map((h) => (
            <th key={h}>{h}</th>
          ))}
        </tr>
      </thead>
      <tbody>{rows.map(children)}</tbody>
    </table>
  );
  return scroll ? <div class="scroll">{table}</div> : table;
}

/** A labelled drop-down whose options are their own values; `blank`, if given, is a first option meaning "". */
export function Select({
  label,
  value,
  options,
  onChange,
  blank,
}: {
  label: string;
  value: string;
  options: string[];
  onChange: (value: string) => void;
  blank?: string;
}) {
  return (
    <label>
      {label}{" "}
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {blank === undefined ? null : <option value="">{blank}</option>}
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}
