import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { newLaui } from '../../shared/ids.ts';
import { sessionLogFile } from '../../ops/logging/sessionLogFile.ts';

/** One log line of a run session, as the runner writes it. */
export const entry = (sessionId: string, message: string, extra: Record<string, unknown> = {}): string =>
  `${JSON.stringify({ timestamp: new Date().toISOString(), level: 'info', category: 'TASK', step: 'run', message, session_id: sessionId, ...extra })}\n`;

/** A session that starts now under the logs root `logs`: its file, with its first line written (followed, it stays open). */
export const startSession = (logs: string): { id: string; file: string } => {
  const id = newLaui(new Date());
  const { dir, file } = sessionLogFile(logs, id, '');
  mkdirSync(dir, { recursive: true });
  appendFileSync(join(dir, file), entry(id, 'started'));
  return { id, file: join(dir, file) };
};
