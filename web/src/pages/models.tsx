// Models: what the gateway serves (GET /v1/inference/models, each model with its capabilities), a
// chat that streams its answer (POST /v1/inference/chat/completions with stream: true) offering only
// chat models, and the three ways to get one when there is none.
import { useState } from "preact/hooks";
import { api, stream } from "../api";
import { Empty, ErrorBox, Select, useLoad, View } from "../ui";
import type { ModelList } from "../types";

interface Message {
  role: "user" | "assistant";
  content: string;
}

/** How to get a chat model: shown when the gateway has none (a fresh install has only the embedding model). */
function NoChatModel() {
  return (
    <div class="setup" data-testid="no-chat-model">
      <p>
        <strong>No chat model yet.</strong> The gateway only has models that cannot chat. Add one in any of three ways:
      </p>
      <ol>
        <li>
          An OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp's server): list it in a providers file and start the service with{" "}
          <code>AGENTBOX_PROVIDERS_FILE=/path/to/providers.json</code>, e.g.{" "}
          <code>
            {'{"providers": [{"name": "ollama", "type": "openai", "base_url": "http://127.0.0.1:11434/v1", "models": ["llama3.2"]}]}'}
          </code>
        </li>
        <li>
          A GGUF model run by the service itself, pulled into its data dir (no restart needed):{" "}
          <code>npm run cli -- models pull hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf</code>
        </li>
        <li>
          A GGUF file you already have, loaded at start: <code>AGENTBOX_MODEL=/path/to/model.gguf npm start</code>
        </li>
      </ol>
      <p class="muted">docs/inference.md has the details.</p>
    </div>
  );
}

export function ModelsPage() {
  const models = useLoad((signal) => api<ModelList>("/v1/inference/models", { signal }), []);
  const chatModels = (models.data?.data ?? []).filter((m) => m.capabilities.includes("chat")).map((m) => m.id);
  const [model, setModel] = useState("");
  const [input, setInput] = useState("");
  const [messages, setMessages] = useState<Message[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const chosen = (chatModels.includes(model) ? model : chatModels[0]) ?? "";
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
                  <code>{m.id}</code> <span class="muted">{[m.owned_by, m.capabilities.join(", ")].filter(Boolean).join(" · ")}</span>
                </li>
              ))}
            </ul>
          )
        }
      </View>
      <h2>Chat</h2>
      {models.data && chatModels.length === 0 ? (
        <NoChatModel />
      ) : (
        <>
          <div class="chat" aria-live="polite">
            {messages.length === 0 ? <p class="empty">Ask the model something.</p> : null}
            {messages.map((m, i) => (
              <p key={i} class={`msg ${m.role}`}>
                <strong>{m.role === "user" ? "You" : chosen}</strong> {m.content || (busy ? "…" : "")}
              </p>
            ))}
          </div>
          <form class="row" onSubmit={send}>
            <Select label="Model" value={chosen} options={chatModels} onChange={setModel} />
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
        </>
      )}
      <ErrorBox error={error} />
    </section>
  );
}
