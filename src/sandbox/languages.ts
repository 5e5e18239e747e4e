// The languages code runs in, as data: one table read by the request schemas, the sandbox service,
// the gateway's code tool and the supervisor's kernel launch. Adding a language is adding a row
// (and, for a new kernel kind, teaching the runtime to start it).
import { type Prepared, prepareJs } from "./transpile.js";

/** The process a kernel runs in inside the sandbox: the supervisor launches one of these. */
export type KernelKind = "python" | "node" | "bash";

/** How code is turned into what the kernel executes. */
export type Preparation =
  /** Handed to the kernel unchanged. */
  | "as_is"
  /** JavaScript: a top-level `await` is wrapped so that the cell can be awaited. */
  | "javascript"
  /** TypeScript: types stripped, then as JavaScript. */
  | "typescript";

export interface LanguageSpec {
  /** The name clients send (`language` in code/run, contexts, the code tool). */
  readonly name: string;
  readonly kernel: KernelKind;
  /** File extension of a source file in the language, with its dot. */
  readonly extension: string;
  readonly prepare: Preparation;
  readonly displayName: string;
}

export const LANGUAGE_TABLE = [
  { name: "python", kernel: "python", extension: ".py", prepare: "as_is", displayName: "Python 3" },
  { name: "javascript", kernel: "node", extension: ".js", prepare: "javascript", displayName: "JavaScript (Node.js)" },
  { name: "typescript", kernel: "node", extension: ".ts", prepare: "typescript", displayName: "TypeScript (Node.js)" },
  { name: "bash", kernel: "bash", extension: ".sh", prepare: "as_is", displayName: "Bash" },
] as const satisfies readonly LanguageSpec[];

export type Language = (typeof LANGUAGE_TABLE)[number]["name"];

/** Every language name, in table order (the order the API documents them in). */
export const LANGUAGES: readonly Language[] = LANGUAGE_TABLE.map((l) => l.name);

const BY_NAME: ReadonlyMap<string, LanguageSpec> = new Map(LANGUAGE_TABLE.map((l) => [l.name, l]));

export function isLanguage(name: unknown): name is Language {
  return typeof name === "string" && BY_NAME.has(name);
}

/** The table row of a language (validated input always has one). */
export function languageSpec(name: Language): LanguageSpec {
  return BY_NAME.get(name) as LanguageSpec;
}

/** Code as the language's kernel runs it. */
export function prepareCode(language: Language, code: string): Prepared {
  const { prepare } = languageSpec(language);
  return prepare === "as_is" ? { code, isAsync: false } : prepareJs(code, prepare === "typescript");
}
