import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';

/** What a run request answers per task (POST /task/run, multiple_tasks, a scheduler cycle's dispatch). */
export interface RunOutcome {
  taskLaui: Laui;
  /** A pre-action failed or returned false: the task was not queued (see actions_status). */
  skipped?: boolean;
  /** Bus message id when the task was dispatched at once, null while it waits for a slot. */
  executionResultId: string | null;
  position: Position | null;
}
