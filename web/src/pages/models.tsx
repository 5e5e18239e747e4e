// Models: what the gateway serves (GET /v1/inference/models) and a chat that streams its answer
// (POST /v1/inference/chat/completions with stream: true).
import { useState } from "preact/hooks";
import { api, stream } from "../api";
import { Empty, ErrorBox, Select, useLoad, View } from "../ui";
import type { ModelList } from "../types";

interface Message {
  role: "user" | "assistant";
  content: string;
}

export function ModelsPage() {
  const models = useLoad((signal) => api<ModelList>("/v1/inference/models", { signal }), []);
  const [model, setModel] = useState("");
  const [input, setInput] = useState("");
  const [messages, setMessages] = useState<Message[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const chosen = model || models.data?.data[0]?.id || "";
  const send = async (e: Event) => {
    e.preventDefault();
    if (!input.trim() || !chosen) return;
    const history: Message[] = [...messages, { role: "user", content: input }];
    setMessages([...history, { role: "assistant", content: "" }]);
    setInput("");
    setBusy(true);
    setError(undefined);
    try {
      await stream("/v1/inference/chat/completions", { model: chosen, messages: history, stream: true }, (ev) => {
        if (typeof ev.data !== "object" || ev.data === null) return; // [DONE]
        const d = ev.data as { choices?: { delta?: { content?: string } }[]; error?: { message?: string } };
        if (d.error) setError(new Error(d.error.message ?? "The model failed"));
        const piece = d.choices?.[0]?.delta?.content ?? "";
        if (piece) setMessages((m) => [...m.slice(0, -1), { role: "assistant", content: (m[m.length - 1]?.content ?? "") + piece }]);
      });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section>
      <h1>Models</h1>
      <View state={models} label="Loading models">
        {(d) =>
          d.data.length === 0 ? (
            <Empty>The gateway has no models configured.</Empty>
          ) : (
            <ul class="chips">
              {d.data.map((m) => (
                <li key={m.id}>
                  <code>{m.id}</code> {m.owned_by ? <span class="muted">{m.owned_by}</span> : null}
                </li>
              ))}
            </ul>
          )
        }
      </View>
      <h2>Chat</h2>
      <div class="chat" aria-live="polite">
        {messages.length === 0 ? <p class="empty">Ask the model something.</p> : null}
        {messages.map((m, i) => (
          <p key={i} class={`msg ${m.role}`}>
            <strong>{m.role === "user" ? "You" : chosen}</strong> {m.content || (busy ? "…" : "")}
          </p>
        ))}
      </div>
      <form class="row" onSubmit={send}>
        <Select label="Model" value={chosen} options={(models.data?.data ?? []).map((m) => m.id)} onChange={setModel} />
        <label class="grow">
          Message <input value={input} onInput={(e) => setInput(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy || !chosen || !input.trim()}>
          Send
        </button>
        <button type="button" class="link" onClick={() => setMessages([])} disabled={busy}>
          Clear
        </button>
      </form>
      <ErrorBox error={error} />
    </section>
  );
}
