import { lazy, Suspense } from 'react';
import type { CodeEditorProps } from './CodeEditor.tsx';

const CodeEditor = lazy(() => import('./CodeEditor.tsx'));

/** The code editor, fetched the first time one is shown; a read-only copy of the text until then. */
export const LazyCodeEditor = (props: CodeEditorProps) => (
  <Suspense fallback={<pre className="code-editor loading" aria-label={props.label}>{props.value}</pre>}>
    <CodeEditor {...props} />
  </Suspense>
);
