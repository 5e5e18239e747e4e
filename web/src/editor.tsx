// The code editor (CodeMirror 6): a textbox named "Code" with syntax highlighting for the four
// languages sandboxes run; Ctrl/Cmd+Enter runs.
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { javascript } from "@codemirror/lang-javascript";
import { python } from "@codemirror/lang-python";
import { bracketMatching, defaultHighlightStyle, indentOnInput, StreamLanguage, syntaxHighlighting } from "@codemirror/language";
import { shell } from "@codemirror/legacy-modes/mode/shell";
import { Compartment, type Extension } from "@codemirror/state";
import { drawSelection, EditorView, highlightActiveLine, keymap, lineNumbers } from "@codemirror/view";
import { useEffect, useRef } from "preact/hooks";

export type Language = "python" | "javascript" | "typescript" | "bash";

function languageOf(lang: Language): Extension {
  switch (lang) {
    case "python":
      return python();
    case "javascript":
      return javascript();
    case "typescript":
      return javascript({ typescript: true });
    case "bash":
      return StreamLanguage.define(shell);
  }
}

export function CodeEditor(props: { value: string; language: Language; onChange: (v: string) => void; onRun: () => void }) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | undefined>(undefined);
  const lang = useRef(new Compartment());
  const latest = useRef(props);
  latest.current = props;
  // What the editor itself reported lately. A `value` prop equal to one of them is the parent
  // echoing an edit back (possibly an older one, when renders lag behind typing): pushing it into
  // the editor would undo the newer edit and start a ping-pong between the two.
  const emitted = useRef<string[]>([]);
  useEffect(() => {
    if (!host.current) return;
    view.current = new EditorView({
      parent: host.current,
      doc: props.value,
      extensions: [
        keymap.of([
          {
            key: "Mod-Enter",
            run: () => {
              latest.current.onRun();
              return true;
            },
          },
        ]),
        lineNumbers(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        syntaxHighlighting(defaultHighlightStyle),
        // Tab indents; Escape then Tab leaves the editor (CodeMirror's accessible tab handling).
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        lang.current.of(languageOf(props.language)),
        EditorView.contentAttributes.of({ "aria-label": "Code", "aria-multiline": "true" }),
        EditorView.updateListener.of((u) => {
          if (!u.docChanged) return;
          const text = u.state.doc.toString();
          emitted.current = [...emitted.current.slice(-31), text];
          latest.current.onChange(text);
        }),
      ],
    });
    return () => view.current?.destroy();
  }, []);
  useEffect(() => {
    view.current?.dispatch({ effects: lang.current.reconfigure(languageOf(props.language)) });
  }, [props.language]);
  useEffect(() => {
    const v = view.current;
    if (!v || v.state.doc.toString() === props.value || emitted.current.includes(props.value)) return;
    // A value from outside (a language's sample): it replaces the text.
    emitted.current = [];
    v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: props.value } });
  }, [props.value]);
  return <div class="editor" ref={host} />;
}
