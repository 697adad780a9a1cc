/** Categories of spec section 2.9; CELERY is the worker category's historic name, kept for clients. */
export type LogCategory = 'API' | 'TASK' | 'TASK_HISTORY' | 'CRON' | 'PERFORMANCE' | 'CELERY';
export const LOG_CATEGORIES: ReadonlyArray<LogCategory> = ['API', 'TASK', 'TASK_HISTORY', 'CRON', 'PERFORMANCE', 'CELERY'];

export type LogLevel = 'info' | 'warning' | 'error' | 'critical';

export interface LogEntry {
  level: LogLevel;
  category: LogCategory;
  message: string;
  step?: string;
  session_id?: string | null;
  [extra: string]: unknown;
}

/** Structured JSON-lines logs; `timestamp` is added by the adapter. */
export interface Logger {
  log(entry: LogEntry): void;
  flush(): Promise<void>;
}
