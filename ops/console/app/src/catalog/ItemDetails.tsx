import { followLink, itemPath } from '../router.ts';
import type { Item } from './types.ts';

const LAUI = /^[0-9a-f]{24}$/;
/** Fields that name another catalog item: shown as links to it. */
const isReference = (key: string, value: unknown): value is string => typeof value === 'string' && LAUI.test(value) && key.endsWith('_laui');

const FIRST = ['laui', 'item_type', 'version', 'created_at', 'created_by', 'updated_at', 'updated_by', 'deleted_at'];
const SKIP = new Set(['name', 'description', 'children', 'access', 'queue_running', 'queue_waiting', 'queue_active']);

const isCode = (value: unknown): value is { language?: string; code?: string; content?: string } =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && ('code' in value || 'content' in value) && 'language' in value;

const Value = ({ name, value }: { name: string; value: unknown }) => {
  if (isReference(name, value)) {
    return (
      <a href={itemPath(value)} onClick={followLink} className="mono">
        {value}
      </a>
    );
  }
  if (isCode(value)) {
    return (
      <pre className="code" aria-label={`${value.language ?? ''} code`}>
        {value.code ?? value.content ?? ''}
      </pre>
    );
  }
  if (value !== null && typeof value === 'object') return <pre className="json">{JSON.stringify(value, null, 2)}</pre>;
  return <span>{value === null || value === undefined ? '—' : String(value)}</span>;
};

/** Every field of an item as stored (secret fields come masked from the service). */
export const ItemDetails = ({ item }: { item: Item }) => {
  const keys = [...FIRST.filter((key) => key in item), ...Object.keys(item).filter((key) => !FIRST.includes(key) && !SKIP.has(key)).sort()];
  return (
    <dl className="fields">
      {item.description ? (
        <>
          <dt>description</dt>
          <dd>{item.description}</dd>
        </>
      ) : null}
      {keys.map((key) => (
        <div key={key} className="field-row">
          <dt>{key}</dt>
          <dd>
            <Value name={key} value={item[key]} />
          </dd>
        </div>
      ))}
    </dl>
  );
};
