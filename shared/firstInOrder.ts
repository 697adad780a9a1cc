/**
 * The first `count` items of `items` under `compare`, in order, without sorting them all:
 * a page of 50 out of a million candidates costs n log 50 instead of n log n.
 * A bounded max-heap holds the best items seen so far; its top is the worst of them.
 * `compare` must be a total order for the result to equal `sort().slice(0, count)`.
 */
export const firstInOrder = <T>(items: Iterable<T>, count: number, compare: (a: T, b: T) => number): T[] => {
  if (count <= 0) return [];
  const heap: T[] = [];
  for (const item of items) {
    if (heap.length < count) {
      heap.push(item);
      siftUp(heap, heap.length - 1, compare);
    } else if (compare(item, heap[0] as T) < 0) {
      heap[0] = item;
      siftDown(heap, 0, compare);
    }
  }
  return heap.sort(compare);
};

const siftUp = <T>(heap: T[], start: number, compare: (a: T, b: T) => number): void => {
  let child = start;
  while (child > 0) {
    const parent = (child - 1) >> 1;
    if (compare(heap[child] as T, heap[parent] as T) <= 0) return;
    swap(heap, child, parent);
    child = parent;
  }
};

const siftDown = <T>(heap: T[], start: number, compare: (a: T, b: T) => number): void => {
  let parent = start;
  for (;;) {
    const left = 2 * parent + 1;
    const right = left + 1;
    let largest = parent;
    if (left < heap.length && compare(heap[left] as T, heap[largest] as T) > 0) largest = left;
    if (right < heap.length && compare(heap[right] as T, heap[largest] as T) > 0) largest = right;
    if (largest === parent) return;
    swap(heap, parent, largest);
    parent = largest;
  }
};

const swap = <T>(heap: T[], i: number, j: number): void => {
  const held = heap[i] as T;
  heap[i] = heap[j] as T;
  heap[j] = held;
};
