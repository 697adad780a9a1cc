import type { Item } from './types.ts';
import { ValueView } from './ValueView.tsx';

const FIRST = ['laui', 'item_type', 'version', 'created_at', 'created_by', 'updated_at', 'updated_by', 'deleted_at'];
const SKIP = new Set(['name', 'description', 'children', 'access', 'queue_running', 'queue_waiting', 'queue_active']);

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
          <dd>{key === 'laui' ? <span className="mono">{item.laui}</span> : <ValueView name={key} value={item[key]} />}</dd>
        </div>
      ))}
    </dl>
  );
};
