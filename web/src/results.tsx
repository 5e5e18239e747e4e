// A run's rich results: images as images, HTML only inside an iframe whose sandbox allows neither
// scripts nor same-origin access (so it can never touch this page or its key), the rest as text.
export interface RichResult {
  text?: string;
  html?: string;
  markdown?: string;
  png?: string;
  jpeg?: string;
  svg?: string;
  json?: unknown;
  latex?: string;
  is_main_result?: boolean;
}

function utf8Base64(s: string): string {
  let bin = "";
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin);
}

export function Result({ result }: { result: RichResult }) {
  if (result.png) return <img class="result-img" alt={result.text ?? "PNG result"} src={`data:image/png;base64,${result.png}`} />;
  if (result.jpeg) return <img class="result-img" alt={result.text ?? "JPEG result"} src={`data:image/jpeg;base64,${result.jpeg}`} />;
  if (result.svg)
    return <img class="result-img" alt={result.text ?? "SVG result"} src={`data:image/svg+xml;base64,${utf8Base64(result.svg)}`} />;
  if (result.html) return <iframe class="result-html" title="HTML result" sandbox="" srcdoc={result.html} />;
  if (result.json !== undefined) return <pre class="result">{JSON.stringify(result.json, null, 2)}</pre>;
  return <pre class="result">{result.text ?? result.markdown ?? result.latex ?? ""}</pre>;
}
