// TypeBox schemas of the inference routes (they validate requests and document the OpenAPI). The
// chat request is the OpenAI one: fields the gateway does not read are allowed and sent upstream.
import { Type } from "@sinclair/typebox";

const open = { additionalProperties: true } as const;

const ContentPart = Type.Object({ type: Type.String() }, open);

export const ChatMessageSchema = Type.Object(
  {
    role: Type.Union([
      Type.Literal("system"),
      Type.Literal("developer"),
      Type.Literal("user"),
      Type.Literal("assistant"),
      Type.Literal("tool"),
      Type.Literal("function"),
    ]),
    content: Type.Optional(Type.Union([Type.String(), Type.Array(ContentPart), Type.Null()])),
    name: Type.Optional(Type.String()),
    tool_calls: Type.Optional(Type.Array(Type.Object({ id: Type.String(), type: Type.String() }, open))),
    tool_call_id: Type.Optional(Type.String()),
  },
  open,
);

const Tool = Type.Object(
  {
    type: Type.String({
      description:
        'A function tool (`{"type": "function", "function": {...}}`) or the built-in code tool `{"type": "code_interpreter", "sandbox_id"?: string, "timeout"?: seconds}`',
    }),
  },
  open,
);

export const ChatRequestSchema = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 256, description: "A model id from GET /v1/inference/models" }),
    messages: Type.Array(ChatMessageSchema, { minItems: 1 }),
    stream: Type.Optional(Type.Boolean()),
    stream_options: Type.Optional(Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, open), Type.Null()])),
    tools: Type.Optional(Type.Array(Tool)),
    tool_choice: Type.Optional(Type.Unknown()),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    stop: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 4 }), Type.Null()])),
    response_format: Type.Optional(Type.Object({ type: Type.String() }, open)),
    max_steps: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 64, description: "Rounds of the built-in code tool before the model must answer (default 8)" }),
    ),
  },
  { ...open, description: "An OpenAI chat completion request; other fields are passed to the upstream as they are" },
);

export const ChatCompletionSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.String({ description: "chat.completion" }),
    created: Type.Integer(),
    model: Type.String(),
    choices: Type.Array(Type.Unknown()),
    usage: Type.Optional(Type.Unknown()),
    steps: Type.Optional(
      Type.Array(Type.Unknown(), {
        description: "With the code tool: each code run, as {tool_call_id, language, code, result: {logs, error, execution_time_ms}}",
      }),
    ),
  },
  {
    ...open,
    description:
      "An OpenAI chat.completion object. With `stream: true` the answer is text/event-stream instead: `data: {chat.completion.chunk}` events ending with `data: [DONE]`; each code-tool run is a chunk with an empty delta and a `tool_step` field.",
  },
);

export const TextCompletionRequestSchema = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 256, description: "A model id from GET /v1/inference/models" }),
    prompt: Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1, maxItems: 16 })], {
      description: "The text to continue, or up to 16 texts (one choice each, times n)",
    }),
    stream: Type.Optional(Type.Boolean()),
    stream_options: Type.Optional(Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, open), Type.Null()])),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1, description: "Tokens to generate per choice (default 16)" })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    n: Type.Optional(Type.Integer({ minimum: 1, maximum: 16, description: "Choices per prompt" })),
    seed: Type.Optional(Type.Integer()),
    echo: Type.Optional(Type.Boolean({ description: "Start each choice's text with its prompt" })),
    stop: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 4 }), Type.Null()])),
  },
  { ...open, description: "An OpenAI legacy completion request; other fields are passed to the upstream as they are" },
);

export const TextCompletionSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.String({ description: "text_completion" }),
    created: Type.Integer(),
    model: Type.String(),
    choices: Type.Array(
      Type.Object(
        {
          text: Type.String(),
          index: Type.Integer(),
          logprobs: Type.Union([Type.Null(), Type.Unknown()]),
          finish_reason: Type.Union([Type.String(), Type.Null()]),
        },
        open,
      ),
    ),
    usage: Type.Optional(Type.Unknown()),
  },
  {
    ...open,
    description: "An OpenAI text_completion object (with `stream: true`, SSE events of the same shape ending with `data: [DONE]`)",
  },
);

export const ModelList = Type.Object({
  object: Type.Literal("list"),
  data: Type.Array(
    Type.Object({
      id: Type.String(),
      object: Type.Literal("model"),
      created: Type.Integer(),
      owned_by: Type.String(),
      capabilities: Type.Array(Type.Union([Type.Literal("chat"), Type.Literal("completions"), Type.Literal("embeddings")]), {
        description:
          "What the gateway serves this model for: `chat` (POST /chat/completions), `completions` (POST /completions), `embeddings` (POST /embeddings). An AgentBox field; OpenAI clients ignore it.",
      }),
    }),
  ),
});

export const UsageQuery = Type.Object({
  since: Type.Optional(Type.String({ format: "date-time", description: "Only usage recorded at or after this ISO-8601 time" })),
});

export const UsageReport = Type.Object({
  usage: Type.Array(
    Type.Object({ model: Type.String(), prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), requests: Type.Integer() }),
  ),
  total_tokens: Type.Integer(),
});
