import { followLink, itemPath } from '../router.ts';
import { useResolved } from '../shell/useResolved.ts';
import { itemName, knownItemName, type ItemName } from './itemNames.ts';

/**
 * A reference to a catalog item: its name as a link to it (the type and id in the tooltip). An
 * item the caller may not see, or that is gone, shows its id and why.
 */
export const ItemRef = ({ laui }: { laui: string }) => {
  const name = useResolved<ItemName | null>(laui, knownItemName(laui) ?? null, itemName);
  if (name?.kind === 'found') {
    return (
      <span className="item-ref">
        <a href={itemPath(laui)} onClick={followLink} title={`${name.item_type} ${laui}`} data-laui={laui}>
          {name.name}
        </a>
        {name.deleted ? <span className="hint"> (deleted)</span> : null}
      </span>
    );
  }
  return (
    <span className="item-ref">
      <a href={itemPath(laui)} onClick={followLink} className="mono" data-laui={laui}>
        {laui}
      </a>
      {name ? <span className="hint"> ({name.reason})</span> : null}
    </span>
  );
};
