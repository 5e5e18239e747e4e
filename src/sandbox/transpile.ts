// Turns what a client sent into what a kernel runs: TypeScript types stripped (sucrase keeps line
// numbers), ES `import` statements turned into `var` bindings of require() calls, top-level `let`/`const`/`class`
// turned into `var` globals (so a cell can be run again, as in a notebook, without "Identifier has
// already been declared"), and code with a top-level `await` wrapped in an async function whose
// top-level declarations are hoisted to globals, so that state still persists between runs.
import * as acorn from "acorn";
import { transform } from "sucrase";

export interface Prepared {
  code: string;
  isAsync: boolean;
}

type Node = acorn.AnyNode;

export function prepareJs(source: string, typescript: boolean): Prepared {
  let code = source;
  if (typescript) {
    try {
      code = transform(code, { transforms: ["typescript"], disableESTransforms: true, keepUnusedImports: true }).code;
    } catch (err) {
      // A failing program is a run with an error, never an HTTP error: the kernel throws the
      // parser's SyntaxError (message "Unexpected token (line:column)") as the run's result.
      const message = JSON.stringify(String((err as Error).message));
      return { code: `throw Object.assign(new SyntaxError(${message}), { stack: "SyntaxError: " + ${message} })`, isAsync: false };
    }
  }
  if (/(^|[\n;])\s*(import|export)\s/.test(code)) code = modulesToScript(code);
  let program: acorn.Program;
  try {
    program = acorn.parse(code, {
      ecmaVersion: "latest",
      sourceType: "script",
      allowAwaitOutsideFunction: true,
      allowReturnOutsideFunction: false,
    });
  } catch {
    return { code, isAsync: false };
  }
  if (!hasTopLevelAwait(program)) return { code: redeclarable(code, program), isAsync: false };
  return { code: wrapAsync(code, program), isAsync: true };
}

/**
 * Top-level `import` declarations become `var` bindings of require() results under the names the
 * code imported (so an import made in one run is still there in the next, like any other global),
 * and `export` keywords are dropped. Each statement keeps its line count. Code that does not parse
 * as a module is returned unchanged: the kernel reports its syntax error the way node would.
 */
function modulesToScript(code: string): string {
  let program: acorn.Program;
  try {
    program = acorn.parse(code, { ecmaVersion: "latest", sourceType: "module", allowAwaitOutsideFunction: true });
  } catch {
    return code;
  }
  const edits: { start: number; end: number; text: string }[] = [];
  const replace = (start: number, end: number, text: string) => {
    const lines = code.slice(start, end).split("\n").length - 1;
    edits.push({ start, end, text: text + "\n".repeat(lines) });
  };
  for (const stmt of program.body) {
    if (stmt.type === "ImportDeclaration") {
      const req = `require(${code.slice(stmt.source.start, stmt.source.end)})`;
      const bindings = stmt.specifiers.map((s) => {
        if (s.type === "ImportNamespaceSpecifier") return `${s.local.name} = ${req}`;
        if (s.type === "ImportDefaultSpecifier") return `${s.local.name} = ((m) => (m && m.__esModule ? m.default : m))(${req})`;
        const imported = s.imported.type === "Identifier" ? s.imported.name : String(s.imported.value);
        return `${s.local.name} = ${req}[${JSON.stringify(imported)}]`;
      });
      replace(stmt.start, stmt.end, bindings.length ? `var ${bindings.join(", ")};` : `${req};`);
    } else if (stmt.type === "ExportAllDeclaration") {
      replace(stmt.start, stmt.end, `require(${code.slice(stmt.source.start, stmt.source.end)});`);
    } else if (stmt.type === "ExportNamedDeclaration") {
      if (stmt.declaration) replace(stmt.start, stmt.declaration.start, "");
      else replace(stmt.start, stmt.end, stmt.source ? `require(${code.slice(stmt.source.start, stmt.source.end)});` : "");
    } else if (stmt.type === "ExportDefaultDeclaration") {
      const named =
        (stmt.declaration.type === "FunctionDeclaration" || stmt.declaration.type === "ClassDeclaration") && stmt.declaration.id;
      replace(stmt.start, stmt.declaration.start, named ? "" : "void ");
    }
  }
  let out = "";
  let last = 0;
  for (const e of edits) {
    out += code.slice(last, e.start) + e.text;
    last = e.end;
  }
  return out + code.slice(last);
}

function hasTopLevelAwait(program: acorn.Program): boolean {
  let found = false;
  const visit = (node: unknown): void => {
    if (found || !node || typeof node !== "object") return;
    const n = node as Node;
    if (typeof n.type !== "string") return;
    if (n.type === "AwaitExpression" || (n.type === "ForOfStatement" && n.await)) {
      found = true;
      return;
    }
    if (n.type === "FunctionDeclaration" || n.type === "FunctionExpression" || n.type === "ArrowFunctionExpression") return;
    if (n.type === "ClassDeclaration" || n.type === "ClassExpression") return;
    for (const value of Object.values(n)) {
      if (Array.isArray(value)) value.forEach(visit);
      else if (value && typeof value === "object" && "type" in value) visit(value);
    }
  };
  program.body.forEach(visit);
  return found;
}

function bindingNames(pattern: acorn.Pattern, out: string[]): void {
  switch (pattern.type) {
    case "Identifier":
      out.push(pattern.name);
      break;
    case "ObjectPattern":
      for (const p of pattern.properties) bindingNames(p.type === "RestElement" ? p.argument : p.value, out);
      break;
    case "ArrayPattern":
      for (const e of pattern.elements) if (e) bindingNames(e, out);
      break;
    case "RestElement":
      bindingNames(pattern.argument, out);
      break;
    case "AssignmentPattern":
      bindingNames(pattern.left, out);
      break;
    default:
      break;
  }
}

/** Top-level `let`/`const` become `var` and classes `var X = class X`, keeping every offset but the edits. */
function redeclarable(code: string, program: acorn.Program): string {
  let out = "";
  let last = 0;
  for (const stmt of program.body) {
    if (stmt.type === "VariableDeclaration" && stmt.kind !== "var") {
      out += `${code.slice(last, stmt.start)}var${stmt.kind === "let" ? "" : "  "}`;
      last = stmt.start + stmt.kind.length;
    } else if (stmt.type === "ClassDeclaration" && stmt.id) {
      out += `${code.slice(last, stmt.start)}var ${stmt.id.name} = ${code.slice(stmt.start, stmt.end)};`;
      last = stmt.end;
    }
  }
  return out + code.slice(last);
}

function wrapAsync(code: string, program: acorn.Program): string {
  const hoisted: string[] = [];
  const prelude: string[] = [];
  let body = "";
  let last = 0;
  for (const stmt of program.body) {
    body += code.slice(last, stmt.start);
    last = stmt.end;
    const text = code.slice(stmt.start, stmt.end);
    if (stmt.type === "VariableDeclaration") {
      const parts = stmt.declarations.map((d) => {
        bindingNames(d.id, hoisted);
        const target = code.slice(d.id.start, d.id.end);
        const init = d.init ? code.slice(d.init.start, d.init.end) : "undefined";
        return `(${target} = ${init})`;
      });
      body += `${parts.join(", ")};`;
    } else if (stmt.type === "FunctionDeclaration" && stmt.id) {
      prelude.push(text);
    } else if (stmt.type === "ClassDeclaration" && stmt.id) {
      hoisted.push(stmt.id.name);
      body += `${stmt.id.name} = ${text};`;
    } else if (stmt.type === "ExpressionStatement" && stmt === program.body[program.body.length - 1]) {
      // The cell's last expression is its value (a rich result), as in a synchronous cell.
      body += `return (${code.slice(stmt.expression.start, stmt.expression.end)});`;
    } else {
      body += text;
    }
  }
  body += code.slice(last);
  const decl = hoisted.length ? `var ${[...new Set(hoisted)].join(", ")};` : "";
  return `${decl}${prelude.join("\n")};(async () => {\n${body}\n})()`;
}
