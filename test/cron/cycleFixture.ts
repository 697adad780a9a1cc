import { randomBytes } from 'node:crypto';
import { fixedClock } from '../../shared/clock.ts';
import { metadataFor } from '../../shared/events.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { MessageBus } from '../../shared/bus/MessageBus.ts';
import type { CodeRunner } from '../../shared/ports/CodeRunner.ts';
import type { LogEntry, Logger } from '../../shared/ports/Logger.ts';
import type { TokenSigner } from '../../shared/ports/TokenSigner.ts';
import { MemoryEventStore } from '../support/MemoryEventStore.ts';
import { AesSecretBox } from '../../ops/keys/AesSecretBox.ts';
import { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import { ProjectionRunner } from '../../projections/runner/ProjectionRunner.ts';
import { ITEMS, itemsProjection } from '../../projections/catalog/itemsProjection.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import { LINKS, linksProjection } from '../../projections/catalog/linksProjection.ts';
import type { LinkDoc } from '../../shared/read-models/LinkDoc.ts';
import { queueMetricsProjection } from '../../projections/catalog/queueMetricsProjection.ts';
import { createAccessControl } from '../../projections/catalog/accessControl.ts';
import { cronLiveness } from '../../projections/cron/cronLiveness.ts';
import { itemStream } from '../../command-side/catalog/item.ts';
import { itemCreatedEvent } from '../../command-side/catalog/itemCreatedEvent.ts';
import { queueHandler } from '../../command-side/queue/handler.ts';
import type { CronDeps } from '../../command-side/cron/schedulerCycle.ts';

/** An event store seen through its own object: per-store caches (task states, claims) are then per "process". */
export interface CountingStore extends EventStore {
  /** Appends per stream made through this view. */
  appends: Map<string, number>;
}

const countingView = (inner: EventStore, before: (streamId: string) => Promise<void>): CountingStore => {
  const appends = new Map<string, number>();
  return {
    appends,
    append: async (streamId, events, expected) => {
      appends.set(streamId, (appends.get(streamId) ?? 0) + 1);
      await before(streamId);
      return inner.append(streamId, events, expected);
    },
    readStream: (streamId, options) => inner.readStream(streamId, options),
    readAll: (options) => inner.readAll(options),
    subscribeToAll: (options) => inner.subscribeToAll(options),
    headPosition: () => inner.headPosition(),
    close: () => inner.close(),
  };
};

/** The collection, with `beforeFind` called (it may throw) before each find: tests count or break the listings. */
export const withFindHook = (items: Collection<ItemDoc>, beforeFind: (options: Parameters<Collection<ItemDoc>['find']>[0]) => void): Collection<ItemDoc> => ({
  get: (id) => items.get(id),
  put: (doc) => items.put(doc),
  delete: (id) => items.delete(id),
  count: (where) => items.count(where),
  peek: (id) => items.peek(id),
  adopt: (doc) => items.adopt(doc),
  find: async (options) => {
    beforeFind(options);
    return items.find(options);
  },
  peekFind: async (options) => {
    beforeFind(options);
    return items.peekFind(options);
  },
});

/** Published `execute_task` messages, kept instead of delivered: no worker runs during these tests. */
export const recordingBus = (): MessageBus & { published: Array<{ topic: string; key: string; value: unknown }> } => {
  const published: Array<{ topic: string; key: string; value: unknown }> = [];
  return {
    published,
    async publish(topic, key, value) {
      published.push({ topic, key, value });
      return `m${published.length}`;
    },
    subscribe: async () => ({ close: async () => undefined }),
    // The only member of every group: it owns every key.
    own: async () => ({ owns: () => true, close: async () => undefined }),
    close: async () => undefined,
  };
};

const noRunner: CodeRunner = {
  runOperator: () => Promise.reject(new Error('no operator runs in these tests')),
  runAction: () => Promise.reject(new Error('no action runs in these tests')),
  reuseScopes: () => [],
  retire: async () => undefined,
  close: async () => undefined,
};
const tokens: TokenSigner = {
  sign: async (_audience, subject) => `token-${String(subject)}`,
  verify: () => Promise.reject(new Error('not used')),
};

export const NOW = new Date('2024-06-10T12:30:00.000Z');
const HOUR_MS = 3600_000;

/**
 * The scheduler cycle on the memory adapters, without HTTP or workers: a project with a workflow, an
 * operator and connections, tasks written as ItemCreated events, the items/links/queue-metrics
 * projections following the log. `deps()` gives one "process": its own queue handler (mutex and
 * state cache) and its own view of the shared log.
 */
export const cycleBed = async () => {
  const store = new MemoryEventStore();
  const readStore = new MemoryReadStore();
  const projections = new ProjectionRunner({ name: 'cycle-test', eventStore: store, readStore, projections: [itemsProjection, linksProjection, queueMetricsProjection] });
  await projections.start();
  const items = readStore.collection<ItemDoc>(ITEMS, itemsProjection.indexes);
  const links = readStore.collection<LinkDoc>(LINKS, linksProjection.indexes);
  const clock = fixedClock(NOW);
  const logs: LogEntry[] = [];
  const logger: Logger = { log: (entry) => void logs.push(entry), flush: async () => undefined };
  const meta = metadataFor(null, new Date(NOW.getTime() - 24 * HOUR_MS), 'test');
  const access = { owners: {}, editors: {}, viewers: {} };
  const settle = async () => {
    if (!(await projections.waitFor(await store.headPosition(), 60_000))) throw new Error('read models did not catch up');
  };
  const create = async (itemType: string, name: string, parent: { laui: Laui; type: string } | null, fields: Record<string, unknown>, laui: Laui = newLaui(NOW)): Promise<Laui> => {
    const event = itemCreatedEvent({ laui, itemType, name, parent, fields, access, metadata: meta });
    await store.append(itemStream(laui), [event], 'no_stream');
    return laui;
  };
  const account = await create('folder.account', 'acme', null, {});
  const project = await create('folder.project', 'main', { laui: account, type: 'folder.account' }, {});
  const workflow = await create('folder.workflow', 'wf', { laui: project, type: 'folder.project' }, {});
  const operatorIn = (projectLaui: Laui) =>
    create('operator', 'op.operator', { laui: projectLaui, type: 'folder.project' }, { codeblock: { language: 'javascript', code: 'export function run() {}' } });
  const operator = await operatorIn(project);
  const connectionIn = (projectLaui: Laui, name: string, maxParallelism: number, sortDict: Record<string, string> = { logical_date: 'ascending' }) =>
    create('connection', name, { laui: projectLaui, type: 'folder.project' }, { content: {}, max_parallelism: maxParallelism, sort_dict: sortDict });
  /** An hourly task of a project's workflow `runsBehind` runs behind (its next_run_date is that many hours before the last fire at 12:00). */
  const taskIn =
    (tree: { project: Laui; workflow: Laui; operator: Laui }) =>
    (name: string, connection: Laui, runsBehind: number, fields: Record<string, unknown> = {}) =>
      create('task', name, { laui: tree.workflow, type: 'folder.workflow' }, {
        project_laui: tree.project,
        account_laui: account,
        operator_laui: tree.operator,
        connection_laui: connection,
        frequency: '0 * * * *',
        start_date: '2024-06-01T00:30:00.000Z',
        end_date: '2024-07-01T00:00:00.000Z',
        state: 'scheduled',
        logical_date: new Date(Date.parse('2024-06-10T11:00:00.000Z') - runsBehind * HOUR_MS).toISOString(),
        next_run_date: new Date(Date.parse('2024-06-10T12:00:00.000Z') - runsBehind * HOUR_MS).toISOString(),
        payload: { run_for: '{{ds}}' },
        ...fields,
      });

  const bed = {
    store,
    items,
    logs,
    clock,
    project,
    settle,
    connection: (name: string, maxParallelism: number, sortDict?: Record<string, string>) => connectionIn(project, name, maxParallelism, sortDict),
    /** An hourly task `runsBehind` runs behind (its next_run_date is that many hours before the last fire at 12:00). */
    task: taskIn({ project, workflow, operator }),
    /**
     * Another project of the account, its cron STARTED as a START leaves it, with its own workflow,
     * operator and connection; `task(name, runsBehind)` adds an hourly task to it.
     */
    async startedProject(name: string, laui?: Laui) {
      const at = NOW.toISOString();
      const folderMetadata = { cron_status: 'STARTED', latest_heartbeat: at, start_date: at, stop_date: null, error: null };
      const projectLaui = await create('folder.project', name, { laui: account, type: 'folder.account' }, { folder_metadata: folderMetadata }, laui);
      const tree = {
        project: projectLaui,
        workflow: await create('folder.workflow', 'wf', { laui: projectLaui, type: 'folder.project' }, {}),
        operator: await operatorIn(projectLaui),
      };
      const connection = await connectionIn(projectLaui, 'db', 100);
      const addTask = taskIn(tree);
      return { laui: projectLaui, task: (taskName: string, runsBehind: number) => addTask(taskName, connection, runsBehind) };
    },
    /**
     * One process's ports on the shared log. `holdAppends` holds this process's appends to some
     * streams until the promise it returns settles (for instance until the other process has written
     * there): the other process then gets there first by order, not by a delay that a loaded machine
     * may outlast. `failingAppends` makes appends to some streams fail as a broken disk would.
     */
    deps(
      overrides: {
        queue?: (eventStore: EventStore) => CronDeps['queue'];
        holdAppends?: (streamId: string) => Promise<void> | undefined;
        failingAppends?: (streamId: string) => boolean;
      } = {},
    ) {
      const eventStore = countingView(store, async (streamId) => {
        await overrides.holdAppends?.(streamId);
        if (overrides.failingAppends?.(streamId) === true) throw new Error(`disk I/O error on ${streamId}`);
      });
      const bus = recordingBus();
      return {
        eventStore,
        items,
        links,
        access: createAccessControl({ items, groupsOf: async () => new Set() }),
        clock,
        secrets: new AesSecretBox(randomBytes(32)),
        bus,
        tokens,
        queue: (overrides.queue ?? queueHandler)(eventStore),
        logger,
        runner: noRunner,
        limits: { timeoutMs: 1000, memoryMb: 64, maxOutputBytes: 1024 },
        liveness: cronLiveness(readStore),
      } satisfies CronDeps;
    },
    async stop() {
      await projections.stop();
    },
  };
  return bed;
};

export type CycleBed = Awaited<ReturnType<typeof cycleBed>>;
