import { followLink } from '../router.ts';
import type { Item } from '../catalog/types.ts';

/** A connection's queue (spec 2.6) and the way to inspect its data with SQL. */
export const ConnectionPanel = ({ connection }: { connection: Item }) => (
  <section className="panel" aria-labelledby="connection-queue-heading">
    <h3 id="connection-queue-heading">Queue</h3>
    <dl className="facts">
      <dt>Running</dt>
      <dd>{String(connection.current_parallelism ?? 0)}</dd>
      <dt>Waiting</dt>
      <dd>{String(connection.in_queue ?? 0)}</dd>
      <dt>Max parallelism</dt>
      <dd>{String(connection.max_parallelism ?? '—')}</dd>
      <dt>Sort</dt>
      <dd>{connection.sort_dict ? JSON.stringify(connection.sort_dict) : 'default'}</dd>
    </dl>
    <p>
      <a href={`/console/sql?connection=${connection.laui}`} onClick={followLink}>
        Inspect with SQL
      </a>
    </p>
  </section>
);
