// Background processes of a sandbox, by pid: list, read, follow (server-sent events), write to
// stdin, signal. They are started by commands/run with `background: true` (./commands.ts).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { SandboxService } from "../service.js";
import { BackgroundList, BackgroundOutput, PidParams, ProcessMessage, SignalQuery, StdinBody } from "../schemas/background.js";
import { errors, SandboxIdParams } from "../../api/schemas/common.js";
import { EventStream } from "../../api/sse.js";

export const backgroundRoutes: FastifyPluginAsyncTypebox<{ sandbox: SandboxService }> = async (app, { sandbox }) => {
  app.get(
    "/sandboxes/:sandbox_id/commands",
    {
      schema: {
        tags: ["commands"],
        summary: "List background processes",
        description: "Background processes started with commands/run `background: true`, running and recently exited, in start order.",
        params: SandboxIdParams,
        response: { 200: BackgroundList, ...errors(400, 401, 404, 503) },
      },
    },
    async (request) => ({ commands: await sandbox.listBackground(request.apiKey, request.params.sandbox_id) }),
  );

  app.get(
    "/sandboxes/:sandbox_id/commands/:pid",
    {
      schema: {
        tags: ["commands"],
        summary: "Get a background process and its output so far",
        description:
          "The process and the latest output of each stream (retained up to AGENTBOX_BACKGROUND_OUTPUT_BYTES per stream, 1 MiB by default; `*_truncated` says earlier output was dropped).",
        params: PidParams,
        response: { 200: BackgroundOutput, ...errors(400, 401, 404, 503) },
      },
    },
    async (request) => sandbox.getBackground(request.apiKey, request.params.sandbox_id, Number(request.params.pid)),
  );

  app.get(
    "/sandboxes/:sandbox_id/commands/:pid/stream",
    {
      schema: {
        tags: ["commands"],
        summary: "Follow a background process's output (server-sent events)",
        description:
          "A text/event-stream: `stdout` and `stderr` events ({text}) with the retained output from the start, then live output, and `end` " +
          "({pid, exit_code}) when the process exits. Closing the connection stops following (the process keeps running).",
        params: PidParams,
        produces: ["text/event-stream"],
        response: { 200: Type.String({ description: "text/event-stream" }), ...errors(400, 401, 404, 503) },
      },
    },
    async (request, reply) => {
      const { sandbox_id } = request.params;
      const pid = Number(request.params.pid);
      const stream = new EventStream(request, reply);
      try {
        const exitCode = await sandbox.followBackground(
          request.apiKey,
          sandbox_id,
          pid,
          { output: (name, text) => stream.send(name, { text }), signal: stream.signal },
          () => stream.open(),
        );
        stream.end({ pid, exit_code: exitCode });
      } catch (err) {
        stream.fail(err);
      }
      return reply;
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/commands/:pid/stdin",
    {
      schema: {
        tags: ["commands"],
        summary: "Write to a background process's stdin",
        description: "Writes `data` (UTF-8) to the process's stdin; `eof: true` closes it afterwards. Over the size limit is a 413.",
        params: PidParams,
        body: StdinBody,
        response: { 200: ProcessMessage, ...errors(400, 401, 404, 413, 503) },
      },
    },
    async (request) => {
      const { sandbox_id } = request.params;
      const pid = Number(request.params.pid);
      const data = Buffer.from(request.body.data, "utf8");
      await sandbox.writeStdin(request.apiKey, sandbox_id, pid, data, request.body.eof === true);
      return { message: `Wrote ${data.length} bytes to the stdin of process ${pid}`, pid };
    },
  );

  app.delete(
    "/sandboxes/:sandbox_id/commands/:pid",
    {
      schema: {
        tags: ["commands"],
        summary: "Signal a background process",
        description: "Sends `signal` (TERM, INT, HUP or KILL; default KILL) to the process and its process group.",
        params: PidParams,
        querystring: SignalQuery,
        response: { 200: ProcessMessage, ...errors(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const { sandbox_id } = request.params;
      const pid = Number(request.params.pid);
      const signal = request.query.signal ?? "KILL";
      await sandbox.signalBackground(request.apiKey, sandbox_id, pid, signal);
      return { message: `Sent SIG${signal} to process ${pid}`, pid };
    },
  );
};
