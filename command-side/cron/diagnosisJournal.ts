import { isDeepStrictEqual } from 'node:util';
import type { DomainEvent, EventMetadata } from '../../shared/events.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Decider } from '../kernel/Decider.ts';
import { handleCommand } from '../kernel/handleCommand.ts';

/**
 * History of GET /task/diagnose results (beyond the spec), one stream per task: `diagnose-<task_laui>`,
 * kept apart from the task's item stream so diagnosing never touches the task's audit history.
 * A result is appended when its set of triggered checks differs from the latest recorded one: a UI
 * polling diagnose every few seconds adds nothing while nothing changes, and the history reads as
 * "since when was this task blocked, and by what".
 */
export type TaskDiagnosed = DomainEvent<
  'TaskDiagnosed',
  { task_laui: Laui; diagnosed_at: string; triggered: string[]; checks: Record<string, unknown> }
>;

export interface DiagnosisEntry {
  diagnosed_at: string;
  diagnosed_by: Laui | null;
  triggered: string[];
  checks: Record<string, unknown>;
}

export interface DiagnosisJournal {
  record(taskLaui: Laui, checks: Record<string, { triggered: boolean }>, metadata: EventMetadata): Promise<void>;
  /** Oldest first. */
  history(taskLaui: Laui): Promise<DiagnosisEntry[]>;
}

export const diagnoseStream = (taskLaui: Laui): string => `diagnose-${taskLaui}`;

interface JournalState {
  lastTriggered: string[] | null;
}

export const journalDecider: Decider<JournalState, TaskDiagnosed['data'], TaskDiagnosed> = {
  initialState: () => ({ lastTriggered: null }),
  evolve: (_state, event) => ({ lastTriggered: event.data.triggered }),
  decide: (command, state) => (isDeepStrictEqual(state.lastTriggered, command.triggered) ? [] : [{ type: 'TaskDiagnosed', data: command }]),
};

export const diagnosisJournal = (eventStore: EventStore): DiagnosisJournal => ({
  async record(taskLaui, checks, metadata) {
    const triggered = Object.entries(checks)
      .filter(([, check]) => check.triggered)
      .map(([key]) => key)
      .sort();
    await handleCommand({ eventStore, streamId: diagnoseStream(taskLaui), decider: journalDecider, command: { task_laui: taskLaui, diagnosed_at: metadata.at, triggered, checks }, metadata });
  },
  async history(taskLaui) {
    const events = await eventStore.readStream(diagnoseStream(taskLaui));
    return events.map((event) => {
      const data = event.data as TaskDiagnosed['data'];
      return { diagnosed_at: data.diagnosed_at, diagnosed_by: event.metadata.user_laui, triggered: data.triggered, checks: data.checks };
    });
  },
});
