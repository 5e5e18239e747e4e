// A run's rich results: images as images, HTML only inside an iframe whose sandbox allows neither
// scripts nor same-origin access (so it can never touch this page or its key), the rest as text.
// The shape of one result comes from the API's own document, through the SDK's generated types.
import type { RichResult } from "./types";

/** Our own readable defaults for HTML results (pandas tables come unstyled); the result follows. */
const FRAME_STYLE =
  "<style>body{font:14px system-ui,sans-serif;margin:8px}table{border-collapse:collapse}" +
  "th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}thead th{background:#f3f4f6}</style>";

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
  if (result.html) return <iframe class="result-html" title="HTML result" sandbox="" srcdoc={FRAME_STYLE + result.html} />;
  if (result.json !== undefined) return <pre class="result">{JSON.stringify(result.json, null, 2)}</pre>;
  return <pre class="result">{result.text ?? result.markdown ?? result.latex ?? ""}</pre>;
}
