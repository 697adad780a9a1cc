import { schedulerDue } from '../../shared/task/readyToRun.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import { itemsProjection } from '../../projections/catalog/itemsProjection.ts';

/**
 * The find step of one scheduler cycle as the loop does it today (project tasks through the
 * project_laui index, then schedulerDue on each): 100,000 scheduled tasks in one project, 1,000 due.
 * The baseline is the same selection over a project of 1,000 tasks.
 */
export async function benchScheduler(): Promise<Array<Record<string, unknown>>> {
  const measure = async (total: number, due: number) => {
    const store = new MemoryReadStore();
    const items = store.collection('items', itemsProjection.indexes);
    const now = new Date('2026-06-01T12:00:00Z');
    for (let index = 0; index < total; index += 1) {
      const isDue = index % Math.round(total / due) === 0;
      await items.put({
        id: `t${index}`,
        laui: `t${index}`,
        item_type: 'task',
        project_laui: 'p',
        is_deleted: false,
        state: 'scheduled',
        frequency: '0 * * * *',
        start_date: '2026-01-01T00:00:00Z',
        end_date: '2027-01-01T00:00:00Z',
        logical_date: isDue ? '2026-06-01T11:00:00Z' : '2026-06-01T12:00:00Z',
        next_run_date: isDue ? '2026-06-01T11:00:00Z' : '2026-06-01T13:00:00Z',
        total_retries: 0,
        retry_number: 0,
      });
    }
    const times: number[] = [];
    let found = 0;
    for (let round = 0; round < 5; round += 1) {
      const started = performance.now();
      const tasks = await items.find({ where: { project_laui: 'p', item_type: 'task', is_deleted: false } });
      found = tasks.filter((task) => schedulerDue(task as unknown as TaskRecord, now, null).ready).length;
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return { ms: Number((times[2] ?? NaN).toFixed(1)), found };
  };
  const big = await measure(100_000, 1_000);
  const small = await measure(1_000, 1_000);
  return [
    {
      figure: 'scheduler.find_due.100k',
      value: big.ms,
      unit: 'ms (median of 5)',
      due_found: big.found,
      baseline: { figure: 'scheduler.find_due.1k', value: small.ms, unit: 'ms' },
      target: 'find <= 50 ms (index on next_run_date)',
      pass: big.ms <= 50,
      note: 'today a project scan through the project_laui index; a next_run_date range index is the open item',
    },
  ];
}
