import { unprocessable } from '../errors.ts';
import { scheduleProblem } from './validateTask.ts';

/** 422 with the spec's string detail (POST /task/run's) when a task's schedule could never run. */
export const requireRunnableSchedule = (task: Readonly<Record<string, unknown>>): void => {
  const problem = scheduleProblem(task);
  if (problem !== null) throw unprocessable(problem);
};
