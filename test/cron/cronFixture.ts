import { expect } from 'chai';
import type { TestService } from '../support/testService.ts';
import { catalogClient, type CatalogClient } from '../support/catalogFixture.ts';
import type { Reply } from '../support/HttpClient.ts';

/** Returns `{status: 'success', ds: payload.day}` at once: a run takes a few milliseconds plus process start. */
export const JS_DS = `
export function run() { return null; }
export function check_completion(connection, payload) { return { status: 'success', ds: payload.day }; }
`;

export const DAY_MS = 24 * 60 * 60 * 1000;
export const utcMidnight = (date: Date): Date => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
export const isoDay = (date: Date): string => date.toISOString().slice(0, 10);

export type Item = Record<string, unknown> & { state?: string; folder_metadata?: Record<string, unknown> };

/** A project with a workflow, a parallelism-1 connection, the ds operator and a 1 s scheduler interval. */
export const cronProject = async (svc: TestService, token: string, account: string) => {
  const api = catalogClient(svc, token);
  const tree = await api.bootstrap(account);
  const workflow = await api.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
  const connection = await api.createOk({ item_type: 'connection', name: 'c', parent_laui: tree.folders.connection, content: {}, max_parallelism: 1 });
  const operator = await api.createOk({ item_type: 'operator', name: 'ds.operator', parent_laui: tree.folders.operator, codeblock: { language: 'javascript', code: JS_DS } });
  // Per-project override (spec 4.5 `{project_name}_cron_interval`); the bootstrap names the project `main`.
  await api.createOk({ item_type: 'config', name: `${account}-system`, parent_laui: tree.folders.config, config_type: 'system', content: { main_cron_interval: 1 } });
  const client = svc.client();
  const project = {
    api,
    tree,
    workflow,
    connection,
    operator,
    manage: (action: unknown, extra: Record<string, unknown> = {}, as = token): Promise<Reply> =>
      client.post('/api/v1/cron/manage', { json: { project_laui: tree.project_laui, action, ...extra }, token: as }),
    item: async (laui: string): Promise<Item> => (await api.get({ item_laui: laui })).json as Item,
    diagnose: (laui: string, query = ''): Promise<Reply> => client.get(`/api/v1/task/diagnose/${laui}${query}`, { token }),
    /** The create body of a daily task that started a week ago, at 01:00 (its first run is for that day, due at the next midnight). */
    dailyTaskBody(name: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
      const today = utcMidnight(new Date());
      return {
        item_type: 'task',
        name,
        parent_laui: workflow,
        project_laui: tree.project_laui,
        account_laui: tree.account_laui,
        operator_laui: operator,
        connection_laui: connection,
        frequency: '0 0 * * *',
        start_date: new Date(today.getTime() - 7 * DAY_MS + 60 * 60 * 1000).toISOString(),
        end_date: new Date(today.getTime() + 30 * DAY_MS).toISOString(),
        payload: { day: '{{ds}}' },
        ...fields,
      };
    },
    /** Such a task created through the catalog (never run by hand): only the cron runs it. */
    dailyTask: (name: string, fields: Record<string, unknown> = {}): Promise<string> => api.createOk(project.dailyTaskBody(name, fields)),
    /** GET /cron/status: the cron with its live heartbeat. */
    async status(): Promise<CronStatus> {
      const reply = await client.get(`/api/v1/cron/status/${tree.project_laui}`, { token });
      expect(reply.status, reply.text).to.equal(200);
      return reply.json as CronStatus;
    },
    /**
     * Waits until the loop, alive, has beaten `ms` or more after `since` (Date.now(); the service's
     * clock is the wall clock): with a 1 s interval, passes that began after `since` went by. What
     * a test checks then is what those passes did (or did not do), however slowly the machine ran them.
     */
    passesAfter: (since: number, ms: number): Promise<CronStatus> =>
      eventually(project.status, (status) => status.alive && Date.parse(String(status.latest_heartbeat)) >= since + ms, `a live heartbeat ${ms} ms after ${new Date(since).toISOString()}`),
    /** The task's states in its history, in order. */
    async states(laui: string): Promise<string[]> {
      const reply = await api.getPath(`/get/item_history?item_laui=${laui}`);
      expect(reply.status, reply.text).to.equal(200);
      return (reply.json as Array<{ changes?: { state?: string } }>).flatMap((entry) => (entry.changes?.state ? [entry.changes.state] : []));
    },
    /** The outputs of every finished run, in history order. */
    async runOutputs(laui: string): Promise<Array<Record<string, unknown>>> {
      const reply = await api.getPath(`/get/item_history?item_laui=${laui}`);
      expect(reply.status, reply.text).to.equal(200);
      return (reply.json as Array<{ changes?: { last_run_output?: Record<string, unknown> } }>).flatMap((entry) =>
        entry.changes?.last_run_output ? [entry.changes.last_run_output] : [],
      );
    },
  };
  return project;
};

export type CronProject = Awaited<ReturnType<typeof cronProject>>;
export type { CatalogClient };

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface CronStatus {
  cron_status: string | null;
  latest_heartbeat: string | null;
  alive: boolean;
  interval_seconds: number;
}

/**
 * Polls `read` until `done` holds, and returns that value. The deadline only ends a wait that would
 * never succeed (generous for a loaded machine): it is no check of speed.
 */
export const eventually = async <T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 60_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}; last: ${JSON.stringify(value)}`);
    await sleep(50);
  }
};
