import { api } from '../api.ts';
import { useApi } from '../shell/useApi.ts';
import type { Item, ItemTypeInfo, Page } from './types.ts';

interface Candidate {
  laui: string;
  name: string;
  item_type: string;
}

/** The item types of a family: `connection` is connection and every connection.<kind> the service knows. */
const familyTypes = (types: Map<string, ItemTypeInfo>, family: string): string[] =>
  family.startsWith('folder.') ? [family] : [...types.values()].filter((type) => type.base === family).map((type) => type.item_type);

/**
 * A `*_laui` field: a choice among the items of the right family the service finds (POST
 * /catalog/search, names only), the current value kept even when it is not among them.
 */
export const ReferenceSelect = (props: {
  id: string;
  family: string;
  types: Map<string, ItemTypeInfo>;
  value: string;
  required: boolean;
  describedBy?: string;
  onChange(value: string): void;
}) => {
  const { data, error } = useApi(
    async (signal) => {
      const found: Candidate[] = [];
      for (const itemType of familyTypes(props.types, props.family)) {
        const page = await api<Page<Item>>('/api/v1/catalog/search', {
          body: { item_filter: { item_type: itemType }, projection: { include: ['name', 'deleted_at'] }, pagination: { per_page: 1000 } },
          signal,
        });
        for (const item of page.items) if (!item.deleted_at) found.push({ laui: item.laui, name: item.name, item_type: item.item_type });
      }
      return found.sort((left, right) => left.name.localeCompare(right.name));
    },
    [props.family],
  );
  const candidates = data ?? [];
  const known = props.value === '' || candidates.some((candidate) => candidate.laui === props.value);
  return (
    <>
      <select
        id={props.id}
        value={props.value}
        required={props.required}
        aria-required={props.required}
        aria-describedby={props.describedBy}
        onChange={(event) => props.onChange(event.target.value)}
      >
        <option value="">{data === null ? 'Loading…' : `— choose a ${props.family} —`}</option>
        {known ? null : <option value={props.value}>{props.value}</option>}
        {candidates.map((candidate) => (
          <option key={candidate.laui} value={candidate.laui}>
            {candidate.name} ({candidate.item_type})
          </option>
        ))}
      </select>
      {error ? <span className="field-error">Could not list them: {error}</span> : null}
    </>
  );
};
