import { schedulerDue } from '../../shared/task/readyToRun.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import { itemsProjection, type ItemDoc } from '../../projections/catalog/itemsProjection.ts';
import { cycleCandidates } from '../../command-side/cron/schedulerCycle.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';

/**
 * The find step of one scheduler cycle (cycleCandidates: the next_run_date ordered index plus the
 * state indexes, then schedulerDue on each): 100,000 scheduled tasks in one project, 1,000 due.
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
        created_seq: index,
      });
    }
    const times: number[] = [];
    let found = 0;
    for (let round = 0; round < 5; round += 1) {
      const started = performance.now();
      const tasks = await cycleCandidates({ items: items as Collection<ItemDoc> }, 'p', now);
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
      note: 'ordered index on next_run_date plus per-project state indexes; no scan of the project',
    },
  ];
}
