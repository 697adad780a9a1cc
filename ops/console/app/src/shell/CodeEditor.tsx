import { useEffect, useRef } from 'react';
import { basicSetup } from 'codemirror';
import { EditorView } from '@codemirror/view';
import { Compartment, EditorState, type Extension } from '@codemirror/state';
import { python } from '@codemirror/lang-python';
import { javascript } from '@codemirror/lang-javascript';
import { json } from '@codemirror/lang-json';
import { sql } from '@codemirror/lang-sql';

export interface CodeEditorProps {
  value: string;
  language: string;
  label: string;
  onChange?(value: string): void;
  readOnly?: boolean;
  id?: string;
}

const languageOf = (language: string): Extension => {
  switch (language.toLowerCase()) {
    case 'python':
      return python();
    case 'javascript':
    case 'js':
    case 'node':
      return javascript();
    case 'json':
      return json();
    case 'sql':
      return sql();
    default:
      // bash and others: plain text (no shell grammar among the installed CodeMirror languages).
      return [];
  }
};

/**
 * The service's CSP allows styles from the console's own files and from elements that carry this
 * response's nonce: CodeMirror writes its theme into a <style> element, so it is handed the nonce.
 */
const nonce = document.querySelector<HTMLMetaElement>('meta[name="csp-nonce"]')?.content ?? '';

/**
 * CodeMirror 6 for codeblocks, JSON and SQL; loaded on demand (its own chunk), so the console's
 * first load does not carry it. Tab is left to keyboard navigation (basicSetup does not bind it),
 * Escape then Tab also leaves the editor.
 */
const CodeEditor = ({ value, language, label, onChange, readOnly = false, id }: CodeEditorProps) => {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const languageSlot = useRef(new Compartment());
  const changed = useRef(onChange);
  changed.current = onChange;

  useEffect(() => {
    if (!host.current) return;
    const editor = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          languageSlot.current.of(languageOf(language)),
          EditorView.cspNonce.of(nonce),
          EditorState.readOnly.of(readOnly),
          EditorView.contentAttributes.of({ 'aria-label': label, ...(id ? { id } : {}) }),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) changed.current?.(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = editor;
    return () => {
      editor.destroy();
      view.current = null;
    };
    // Created once; value, language and readOnly changes are applied below.
  }, []);

  useEffect(() => {
    view.current?.dispatch({ effects: languageSlot.current.reconfigure(languageOf(language)) });
  }, [language]);

  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value) editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
  }, [value]);

  return <div ref={host} className={`code-editor${readOnly ? ' read-only' : ''}`} />;
};

export default CodeEditor;
