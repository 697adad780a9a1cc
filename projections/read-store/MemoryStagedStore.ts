import type { Collection, Doc, IndexSpec, StagedReadStore } from '../../shared/read-store/ReadStore.ts';
import { MemoryCollection } from './MemoryCollection.ts';

/**
 * A memory rebuild: fresh collections beside the live ones. The swap moves each staged
 * collection's state into the live object of the same name, all in one synchronous step, so a
 * reader sees either the old read models or the rebuilt ones, never a mix or a half.
 */
export class MemoryStagedStore implements StagedReadStore {
  private readonly staged = new Map<string, MemoryCollection>();
  private finished: 'swapped' | 'discarded' | null = null;

  constructor(private readonly live: Map<string, MemoryCollection>) {}

  collection<T extends Doc = Doc>(name: string, indexes: ReadonlyArray<IndexSpec> = []): Collection<T> {
    this.assertOpen();
    let collection = this.staged.get(name);
    if (collection) collection.declare(indexes);
    else {
      collection = new MemoryCollection(name, [...(this.live.get(name)?.declared() ?? []), ...indexes]);
      this.staged.set(name, collection);
    }
    return collection as unknown as Collection<T>;
  }

  async swap(): Promise<void> {
    this.assertOpen();
    this.finished = 'swapped';
    for (const [name, staged] of this.staged) {
      const live = this.live.get(name);
      if (live) live.takeOver(staged);
      else this.live.set(name, staged);
    }
    this.staged.clear();
  }

  async discard(): Promise<void> {
    this.finished ??= 'discarded';
    this.staged.clear();
  }

  async rebuild(): Promise<StagedReadStore> {
    throw new Error('A staged read store cannot itself be rebuilt');
  }

  async clear(): Promise<void> {
    for (const collection of this.staged.values()) collection.clear();
  }

  /** A staged store shares nothing that needs closing; closing it does not discard it. */
  async close(): Promise<void> {}

  private assertOpen(): void {
    if (this.finished) throw new Error(`This staged read store was ${this.finished}; start another rebuild`);
  }
}
