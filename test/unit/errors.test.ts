// Errors: each ApiError code fixes one HTTP status, and the one error handler maps Fastify's own
// errors (validation, body parsing, router) to the envelope. Checked with Fastify's in-process
// inject(): no port, no sandbox.
import assert from "node:assert/strict";
import { test } from "node:test";
import Fastify, { type FastifyError } from "fastify";
import { installErrorHandler, routerError, toApiError } from "../../src/api/error-handler.js";
import { ApiError, invalid, sandboxNotFound } from "../../src/errors.js";

test("every code has its status", () => {
  const expected: Record<string, number> = {
    invalid_request: 400,
    invalid_state: 400,
    unauthorized: 401,
    sandbox_not_found: 404,
    context_not_found: 404,
    not_found: 404,
    request_timeout: 408,
    payload_too_large: 413,
    headers_too_large: 431,
    rate_limited: 429,
    quota_exceeded: 429,
    internal_error: 500,
    upstream_error: 502,
    at_capacity: 503,
    upstream_timeout: 504,
  };
  for (const [code, status] of Object.entries(expected)) {
    assert.equal(new ApiError(code as ApiError["code"], "x").status, status, code);
  }
  assert.equal(sandboxNotFound("abc").code, "sandbox_not_found");
  assert.match(sandboxNotFound("abc").message, /'abc'/);
  assert.equal(invalid("bad").status, 400);
});

/** An error carrying the fields Fastify sets (validation details are loosely typed there too). */
const fastifyError = (props: Record<string, unknown> & { message?: string }): FastifyError =>
  Object.assign(new Error(props.message ?? "e"), props) as unknown as FastifyError;

test("Fastify's errors become ApiErrors", () => {
  const tooLarge = toApiError(fastifyError({ code: "FST_ERR_CTP_BODY_TOO_LARGE", statusCode: 413 }));
  assert.equal(tooLarge?.code, "payload_too_large");
  assert.equal(toApiError(fastifyError({ code: "FST_ERR_CTP_INVALID_MEDIA_TYPE", statusCode: 415 }))?.code, "invalid_request");
  assert.equal(toApiError(new SyntaxError("Unexpected token"))?.code, "invalid_request");
  assert.equal(toApiError(fastifyError({ statusCode: 429 }))?.code, "rate_limited");
  assert.equal(toApiError(fastifyError({ statusCode: 404 }))?.code, "not_found");
  assert.equal(toApiError(fastifyError({ message: "Multipart: Boundary not found" }))?.code, "invalid_request");
  // Not the client's fault: no ApiError, so the handler answers 500 and logs it.
  assert.equal(toApiError(new Error("disk on fire")), undefined);
  assert.equal(toApiError(fastifyError({ statusCode: 500 })), undefined);
  const same = new ApiError("at_capacity", "full", 3);
  assert.equal(toApiError(same), same);
});

test("validation errors name the field and, for an enum, the allowed values", () => {
  const enumErr = toApiError(
    fastifyError({
      validation: [{ keyword: "enum", instancePath: "/language", params: { allowedValues: ["python", "bash"] }, message: "x" }],
      validationContext: "body",
    }),
  );
  assert.equal(enumErr?.code, "invalid_request");
  assert.equal(enumErr?.message, "Invalid body: 'language' must be one of python, bash");
  const required = toApiError(
    fastifyError({
      validation: [{ keyword: "required", instancePath: "", params: { missingProperty: "code" }, message: "x" }],
      validationContext: "body",
    }),
  );
  assert.equal(required?.message, "Invalid body: 'code' is required");
});

test("router errors", () => {
  assert.equal(routerError(fastifyError({ code: "FST_ERR_BAD_URL" })).code, "invalid_request");
  assert.equal(routerError(fastifyError({ code: "FST_ERR_MAX_PARAM_LENGTH" })).code, "invalid_request");
  assert.equal(routerError(fastifyError({ code: "SOMETHING_ELSE" })).code, "internal_error");
});

test("the handler answers the envelope, with Retry-After in whole seconds when the error has one", async () => {
  const app = Fastify({ logger: false });
  installErrorHandler(app);
  app.get("/full", async () => {
    throw new ApiError("at_capacity", "The service is full", 1.2);
  });
  app.get("/bad", async () => {
    throw invalid("no");
  });
  app.get("/boom", async () => {
    throw new Error("secret detail");
  });
  const full = await app.inject({ method: "GET", url: "/full" });
  assert.equal(full.statusCode, 503);
  assert.equal(full.headers["retry-after"], "2");
  assert.deepEqual(full.json(), { error: { code: "at_capacity", message: "The service is full" } });
  const bad = await app.inject({ method: "GET", url: "/bad" });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.headers["retry-after"], undefined);
  const boom = await app.inject({ method: "GET", url: "/boom" });
  assert.equal(boom.statusCode, 500);
  assert.equal(boom.json().error.code, "internal_error");
  assert.doesNotMatch(boom.body, /secret detail/, "an unexpected error's text is logged, not sent");
  const missing = await app.inject({ method: "GET", url: "/nope" });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.json().error.code, "not_found");
  await app.close();
});
