import { UserRef } from '../shell/UserRef.tsx';
import { ItemRef } from './ItemRef.tsx';

const LAUI = /^[0-9a-f]{24}$/;
/** Keys that name another catalog item (`operator_laui`, and `laui` inside a task's actions). */
const isReferenceKey = (key: string): boolean => key === 'laui' || key.endsWith('_laui');
/** Fields that name a user (`run_by`: whose rights a task's run acts with). */
const USER_KEYS = new Set(['created_by', 'updated_by', 'user_laui', 'run_by']);

const isCode = (value: unknown): value is { language?: string; code?: string; content?: string } =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && ('code' in value || 'content' in value) && 'language' in value;

/** The items a nested value refers to (a task's actions list them as `{laui}`), in order, once each. */
export const nestedReferences = (value: unknown, into: Set<string> = new Set()): Set<string> => {
  if (Array.isArray(value)) for (const inner of value) nestedReferences(inner, into);
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (typeof inner === 'string' && isReferenceKey(key) && LAUI.test(inner)) into.add(inner);
      else nestedReferences(inner, into);
    }
  }
  return into;
};

/**
 * One field's value as the console shows it: references to items by name (a link), users by
 * name, code as code, other objects as JSON with the items they refer to named below.
 */
export const ValueView = ({ name, value }: { name: string; value: unknown }) => {
  if (typeof value === 'string' && LAUI.test(value)) {
    if (USER_KEYS.has(name)) return <UserRef laui={value} />;
    if (isReferenceKey(name)) return <ItemRef laui={value} />;
  }
  if (isCode(value)) {
    return (
      <pre className="code" aria-label={`${value.language ?? ''} code`}>
        {value.code ?? value.content ?? ''}
      </pre>
    );
  }
  if (value !== null && typeof value === 'object') {
    const references = [...nestedReferences(value)];
    return (
      <>
        <pre className="json">{JSON.stringify(value, null, 2)}</pre>
        {references.length > 0 ? (
          <p className="hint refers-to">
            Refers to:{' '}
            {references.map((laui, index) => (
              <span key={laui}>
                {index > 0 ? ', ' : null}
                <ItemRef laui={laui} />
              </span>
            ))}
          </p>
        ) : null}
      </>
    );
  }
  return <span>{value === null || value === undefined ? '—' : String(value)}</span>;
};
