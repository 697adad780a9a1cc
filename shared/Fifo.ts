/**
 * First-in first-out queue with O(1) shift: Array#shift moves every element, which turns a
 * backlog of 100,000 messages into quadratic work. Shifted slots are reclaimed in one splice
 * once they make up half of the array.
 */
export class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    // Drop the reference at once so a consumed message can be collected before the splice.
    this.items[this.head] = undefined as T;
    this.head += 1;
    if (this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** The item `index` places after the head, if any. */
  at(index: number): T | undefined {
    return index < 0 ? undefined : this.items[this.head + index];
  }

  toArray(): T[] {
    return this.items.slice(this.head);
  }
}
