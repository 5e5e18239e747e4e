// Response serializers compiled on a route's first answer instead of at start-up: Fastify's
// default (fast-json-stringify) compiles every route's response schemas while the service starts,
// about a second of CPU for this API, although most routes answer rarely or never in a process's
// life. Each route pays its compile once, on its first answer; after that, one null check.
import { SerializerSelector } from "@fastify/fast-json-stringify-compiler";

type Factory = ReturnType<typeof SerializerSelector>;
type Compile = ReturnType<Factory>;

const eager = SerializerSelector();

export const lazySerializers: Factory = (externalSchemas, options) => {
  const compile = eager(externalSchemas, options);
  return ((route: Parameters<Compile>[0]) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => {
      serialize ??= compile(route) as (data: unknown) => string;
      return serialize(data);
    };
  }) as Compile;
};
