import { useId, useState } from 'react';
import { api, query } from '../api.ts';
import { useApi } from '../shell/useApi.ts';
import { ItemForm } from './ItemForm.tsx';
import { typeInfo } from './itemTypes.ts';
import type { Item, ItemTypeInfo, Page } from './types.ts';

/**
 * A task names its project and account: taken from the folders above where it is created.
 * Other types get no defaults.
 */
const ancestorDefaults = async (parent: Item, signal: AbortSignal): Promise<Record<string, unknown>> => {
  const { items } = await api<Page<Item>>(`/api/v1/catalog/get?${query({ item_laui: parent.laui, parent_or_child: 'parent', depth: 20, per_page: 20 })}`, { signal });
  const chain = [parent, ...items];
  const project = chain.find((item) => item.item_type === 'folder.project');
  const account = chain.find((item) => item.item_type === 'folder.account');
  return { ...(project ? { project_laui: project.laui } : {}), ...(account ? { account_laui: account.laui } : {}) };
};

/** The allowed types with the subtypes the service knows (`connection` also offers connection.postgresql...). */
const withSubtypes = (allowed: string[], types: Map<string, ItemTypeInfo>): string[] =>
  allowed.flatMap((type) => [type, ...[...types.keys()].filter((candidate) => candidate.startsWith(`${type}.`) && !allowed.includes(candidate))]);

/** Pick a type the parent allows (spec 2.2), then fill its form. */
export const NewItem = (props: { parent: Item; allowed: string[]; types: Map<string, ItemTypeInfo>; onCreated(laui: string): void; onCancel(): void }) => {
  const choices = withSubtypes(props.allowed, props.types);
  const [itemType, setItemType] = useState(choices[0] ?? '');
  const defaults = useApi((signal) => ancestorDefaults(props.parent, signal), [props.parent.laui]);
  const id = useId();
  const info = typeInfo(props.types, itemType);
  return (
    <section className="new-item" aria-label={`New item in ${props.parent.name}`}>
      <div className="field">
        <label htmlFor={id}>Type of the new item in {props.parent.name}</label>
        <select id={id} value={itemType} onChange={(event) => setItemType(event.target.value)}>
          {choices.map((type) => (
            <option key={type} value={type}>
              {type}
            </option>
          ))}
        </select>
      </div>
      {info && defaults.data ? (
        <ItemForm
          key={itemType}
          info={{ ...info, item_type: itemType }}
          types={props.types}
          item={null}
          parentLaui={props.parent.laui}
          defaults={defaults.data}
          onSaved={props.onCreated}
          onCancel={props.onCancel}
        />
      ) : (
        <p className="hint">Loading…</p>
      )}
    </section>
  );
};
