import { MongoServerError, type Db, type MongoClient } from 'mongodb';
import type { StagedReadStore } from '../../../shared/read-store/ReadStore.ts';
import type { CollectionState } from './CollectionState.ts';
import { MongoCollections, STAGING_PREFIX } from './MongoCollections.ts';
import { existingIndexes } from './mongoIndexes.ts';

const NAMESPACE_EXISTS = 48;

/**
 * A rebuild's collections, `staging.<name>` in the same database, where no reader looks. Each is
 * created at first use with the live collection's indexes, so the swap brings the indexes along.
 * The swap renames each over its live collection (renameCollection with dropTarget, atomic per
 * collection within a database), in the order they were first asked for.
 */
export class MongoStagedStore extends MongoCollections implements StagedReadStore {
  private finished: 'swapped' | 'discarded' | null = null;

  constructor(
    client: MongoClient,
    db: Db,
    atomic: boolean,
    private readonly liveStateOf: (name: string) => CollectionState,
  ) {
    super(client, db, atomic, STAGING_PREFIX);
  }

  protected override stateOf(name: string): CollectionState {
    if (this.finished) throw new Error(`This staged read store was ${this.finished}; start another rebuild`);
    return super.stateOf(name);
  }

  protected override async prepare(name: string): Promise<void> {
    try {
      await this.db.createCollection(STAGING_PREFIX + name);
    } catch (error) {
      if (!(error instanceof MongoServerError) || error.code !== NAMESPACE_EXISTS) throw error;
    }
    const live = this.liveStateOf(name);
    await live.allReady().catch(() => {});
    const indexes = await existingIndexes(live.driver);
    if (indexes.length > 0) await this.db.collection(STAGING_PREFIX + name).createIndexes(indexes);
  }

  async swap(): Promise<void> {
    if (this.finished) throw new Error(`This staged read store was ${this.finished}; start another rebuild`);
    const states = [...this.states.values()];
    for (const state of states) await state.allReady();
    this.finished = 'swapped';
    for (const state of states) await this.db.renameCollection(STAGING_PREFIX + state.name, state.name, { dropTarget: true });
  }

  async discard(): Promise<void> {
    if (this.finished === 'swapped') return;
    this.finished = 'discarded';
    for (const state of this.states.values()) await this.db.dropCollection(STAGING_PREFIX + state.name).catch(() => false);
  }

  async rebuild(): Promise<StagedReadStore> {
    throw new Error('A staged read store cannot itself be rebuilt');
  }

  /** Shares the live store's client: closing the staged store closes nothing. */
  async close(): Promise<void> {}
}
