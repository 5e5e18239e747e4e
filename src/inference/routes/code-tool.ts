// A chat completion with the built-in code tool: model turns and code runs in a sandbox alternate
// until the model answers; streamed, each run is an extra chunk (`tool_step`) between the model's.
import type { ServerResponse } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import { writeSse } from "../../api/sse.js";
import {
  addUsage,
  CodeRunner,
  type CodeToolSandboxes,
  type CodeToolSpec,
  DEFAULT_MAX_STEPS,
  type Step,
  TurnAccumulator,
  upstreamBody,
} from "../codetool.js";
import type { ChatCompletion, ChatRequest, OutgoingRequest, Provider, Usage } from "../types.js";
import type { UsageLog } from "../usage.js";
import { chunkOf } from "../upstream-answer.js";
import { errorEvent, startSse } from "./answer.js";

const CODE_CALL = "code_interpreter";
const TOOL_STEP_CHOICES = [{ index: 0, delta: {}, finish_reason: null }];

/** A completion with the built-in code tool: model turns and code runs alternate until the model answers. */
export async function withCodeTool(
  sandboxes: CodeToolSandboxes,
  usageLog: UsageLog,
  request: FastifyRequest,
  reply: FastifyReply,
  provider: Provider,
  body: ChatRequest,
  spec: CodeToolSpec,
  signal: AbortSignal,
): Promise<ChatCompletion | FastifyReply> {
  const runner = new CodeRunner(sandboxes, request.apiKey, spec);
  const total: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const steps: Step[] = [];
  const messages = [...body.messages];
  const maxSteps = body.max_steps ?? DEFAULT_MAX_STEPS;
  const stream = body.stream === true;
  let res: ServerResponse | undefined;
  let head = { id: "", created: 0, model: body.model };
  try {
    for (let rounds = 0; ; rounds++) {
      const last = rounds >= maxSteps;
      let counted: Usage | undefined;
      const out: OutgoingRequest = {
        body: upstreamBody(body, messages, last, stream),
        onUsage: (u) => {
          counted = u;
        },
      };
      let message: {
        content: ChatCompletion["choices"][number]["message"]["content"];
        calls: NonNullable<ChatCompletion["choices"][number]["message"]["tool_calls"]>;
      };
      let final: ChatCompletion | undefined;
      if (!stream) {
        const result = await provider.complete(out, signal);
        addUsage(total, counted ?? result.json.usage);
        const m = result.json.choices[0]?.message;
        message = { content: m?.content ?? null, calls: m?.tool_calls ?? [] };
        final = result.json;
      } else {
        const batches = await provider.stream(out, signal);
        res ??= startSse(reply);
        const turn = new TurnAccumulator();
        let seen: Usage | undefined;
        for await (const batch of batches) {
          let text = "";
          for (const data of batch) {
            const chunk = chunkOf(data);
            if (chunk.usage) seen = chunk.usage;
            if (Array.isArray(chunk.choices) && chunk.choices.length === 0) continue; // usage: summed at the end
            head = { id: chunk.id, created: chunk.created, model: chunk.model };
            turn.add(chunk);
            text += `data: ${data}\n\n`;
          }
          if (text !== "") {
            const wait = writeSse(res, text);
            if (wait) await wait;
          }
          if (signal.aborted) return reply;
        }
        addUsage(total, counted ?? seen);
        message = { content: turn.content === "" ? null : turn.content, calls: turn.toolCalls() };
      }
      const codeCalls = message.calls.filter((c) => c.function?.name === CODE_CALL);
      const clientCalls = message.calls.filter((c) => c.function?.name !== CODE_CALL);
      if (codeCalls.length === 0 || last) {
        if (final) return { ...final, usage: total, steps };
        break;
      }
      messages.push({ role: "assistant", content: message.content, tool_calls: message.calls });
      for (const call of codeCalls) {
        const step = await runner.run(call);
        steps.push(step);
        messages.push(CodeRunner.message(step));
        if (res) {
          // A chunk with an empty delta, so OpenAI clients that read every event as a chunk take it in stride.
          const event = JSON.stringify({
            ...head,
            object: "chat.completion.chunk",
            choices: TOOL_STEP_CHOICES,
            tool_step: { index: steps.length - 1, ...step },
          });
          const wait = writeSse(res, `data: ${event}\n\n`);
          if (wait) await wait;
        }
        if (signal.aborted) return reply;
      }
      if (clientCalls.length > 0) {
        // The model also called the client's own tools: those are the client's to answer.
        if (final) {
          const choice = final.choices[0] as ChatCompletion["choices"][number];
          return { ...final, choices: [{ ...choice, message: { ...choice.message, tool_calls: clientCalls } }], usage: total, steps };
        }
        break;
      }
    }
    // Streamed: the summed usage (if asked for), then the end.
    const r = res as ServerResponse;
    if (body.stream_options?.include_usage === true) {
      const chunk = { ...head, object: "chat.completion.chunk", choices: [], usage: total };
      r.write(`data: ${JSON.stringify(chunk)}\n\n`);
    }
    r.end("data: [DONE]\n\n");
    return reply;
  } catch (err) {
    if (!res) throw err; // nothing sent yet: a plain HTTP error
    if (!signal.aborted) res.end(errorEvent(err, request));
    return reply;
  } finally {
    if (res && !res.writableEnded) res.destroy();
    await runner.dispose();
    usageLog.record(request.apiKey.id, body.model, total.prompt_tokens, total.completion_tokens);
  }
}
