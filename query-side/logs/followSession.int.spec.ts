import { expect } from 'chai';
import { appendFileSync, existsSync, readFileSync, readdirSync, readlinkSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { newLaui } from '../../shared/ids.ts';
import { SseClient } from '../../test/support/sseClient.ts';
import { entry, startSession } from '../../test/support/sessionLogs.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';

/** File descriptors of this process open on `path` (Linux: /proc/self/fd). */
const openDescriptors = (path: string): number =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  }).length;

/** inotify watches of this process on the file `path` (Linux: /proc/self/fdinfo lists them by inode). */
const watchesOn = (path: string): number => {
  const inode = ` ino:${statSync(path).ino.toString(16)} `;
  let count = 0;
  for (const fd of readdirSync('/proc/self/fdinfo')) {
    try {
      count += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').filter((line) => line.startsWith('inotify') && line.includes(inode)).length;
    } catch {
      // Closed meanwhile.
    }
  }
  return count;
};

const logMessages = (client: SseClient): unknown[] => client.events.filter((event) => event.event === 'log').map((event) => event.data.message);

/** The idle timeout of the second suite: long enough that the half of it slept below is not outlasted by a loaded machine's delays. */
const IDLE_SECONDS = 2;

/** How long a condition is waited for: it only ends a wait that would never succeed (a loaded machine is slow, not wrong). */
const WAIT_MS = 60_000;

describe('following a session live (GET /logs/session/{id} while the run goes on)', function () {
  this.timeout(4 * WAIT_MS);
  let svc: TestService;
  let logs: string;
  const clients: SseClient[] = [];
  const open = (id: string): SseClient => {
    const client = SseClient.open(svc.service.url, `/api/v1/logs/session/${id}`);
    clients.push(client);
    return client;
  };

  before(async () => {
    // 20 followers from one address below: more than one anonymous address's default share (8). An
    // idle timeout of an hour: whatever ends a stream within a test's waits, the idle timeout did not.
    svc = await startTestService({ LOG_FOLLOW_IDLE_SECONDS: '3600', LOG_STREAMS_PER_ADDRESS: '32' });
    logs = join(svc.dataDir, 'logs');
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(async () => svc.stop());

  it('given a session still running, when followed, then lines written later arrive as they are written, before the session ends, until the session_end line, then done', async () => {
    const { id, file } = startSession(logs);
    const client = open(id);
    await client.waitFor(() => logMessages(client).length === 1, WAIT_MS, 'the first line');
    expect(client.events[0]).to.deep.include({ event: 'status', data: { state: 'processing' } });

    // Each line is waited for before the next is written: it came while the session went on, not at its end.
    appendFileSync(file, entry(id, 'second line'));
    await client.waitFor(() => logMessages(client).length === 2, WAIT_MS, 'the second line');

    // A line of another session of the same second, in the same file: not this stream's.
    appendFileSync(file, entry(newLaui(new Date(Number.parseInt(id.slice(0, 8), 16) * 1000)), 'neighbour'));
    // Through the service's own logger (buffered, drained every 20 ms), as the runner's lines are.
    svc.service.logger.log({ level: 'error', category: 'TASK', step: 'run', message: 'through the logger', session_id: id });
    await client.waitFor(() => logMessages(client).length === 3, WAIT_MS, 'the logger line');
    expect(client.ended).to.equal(false);

    svc.service.logger.log({ level: 'info', category: 'TASK_HISTORY', step: 'finish', message: 'Task ended: success', session_id: id, status: 'success', session_end: true });
    await client.waitFor(() => client.ended, WAIT_MS, 'the end of the stream');
    expect(client.events.map((event) => event.event)).to.deep.equal(['status', 'log', 'log', 'log', 'log', 'done']);
    expect(logMessages(client)).to.deep.equal(['started', 'second line', 'through the logger', 'Task ended: success']);
    expect(client.events.at(-2)?.data).to.include({ session_end: true, status: 'success', level: 'info' });
    expect(client.events.at(-1)?.data).to.deep.equal({ state: 'complete', total_count: 4 });
    await waitUntil(() => svc.service.logStreams.size === 0, WAIT_MS);
  });

  it('given a session that ended long ago without its session_end line, when followed, then its lines and done at once (the idle time counts from the last change)', async () => {
    const { id, file } = startSession(logs);
    appendFileSync(file, entry(id, 'last words'));
    const anHourAgo = new Date(Date.now() - 3600_000);
    utimesSync(file, anHourAgo, anHourAgo);
    // An hour of idle time counted from the open would outlast the wait: it ended because the file was idle already.
    const client = open(id);
    await client.waitFor(() => client.ended, WAIT_MS, 'the end of the stream');
    expect(logMessages(client)).to.deep.equal(['started', 'last words']);
    expect(client.events.at(-1)).to.deep.equal({ id: '', event: 'done', data: { state: 'complete', total_count: 2 } });
  });

  it('given a client following a session, when it disconnects, then its stream, file handle and watcher are freed (long before the idle timeout)', async function () {
    if (!existsSync('/proc/self/fdinfo')) this.skip();
    // The earlier cases' streams may still be closing, on a session file this one can share (the
    // sessions of one second share a file): counted from a service with no stream open.
    await waitUntil(() => svc.service.logStreams.size === 0, WAIT_MS);
    const { id, file } = startSession(logs);
    // A stream already out of the set may still be closing its handle: counted once the count holds still.
    let settled = -1;
    await waitUntil(() => {
      const now = openDescriptors(file);
      const still = now === settled;
      settled = now;
      return still;
    }, WAIT_MS, 200);
    const before = { descriptors: openDescriptors(file), watches: watchesOn(file), streams: svc.service.logStreams.size };
    const client = open(id);
    await client.waitFor(() => logMessages(client).length === 1, WAIT_MS, 'the first line');
    // Following now: the replay is done and the watcher is set.
    await waitUntil(() => watchesOn(file) === before.watches + 1 && openDescriptors(file) === before.descriptors + 1, WAIT_MS);
    expect(svc.service.logStreams.size).to.equal(before.streams + 1);

    client.close();
    // Freed because the client left: the idle timeout (an hour) would come long after this wait gave up.
    await waitUntil(() => svc.service.logStreams.size === before.streams && openDescriptors(file) === before.descriptors && watchesOn(file) === before.watches, WAIT_MS);
    // A line written afterwards is read by nobody, and nothing fails.
    appendFileSync(file, entry(id, 'after the client left', { session_end: true }));
    const health = await svc.client().get('/healthz');
    expect(health.status).to.equal(200);
  });

  it('given many clients following, when they all leave, then every stream is freed', async () => {
    const { id } = startSession(logs);
    const many = Array.from({ length: 20 }, () => open(id));
    await Promise.all(many.map((client) => client.waitFor(() => logMessages(client).length === 1, WAIT_MS, 'the first line')));
    expect(svc.service.logStreams.size).to.be.at.least(20);
    for (const client of many) client.close();
    await waitUntil(() => svc.service.logStreams.size === 0, WAIT_MS);
  });
});

describe('following a session: idle timeout and shutdown', function () {
  this.timeout(4 * WAIT_MS);
  let svc: TestService;
  let logs: string;
  let stopped = false;

  before(async () => {
    svc = await startTestService({ LOG_FOLLOW_IDLE_SECONDS: String(IDLE_SECONDS) });
    logs = join(svc.dataDir, 'logs');
  });
  after(async () => {
    if (!stopped) await svc.stop();
  });

  it('given a followed session with no new line for LOG_FOLLOW_IDLE_SECONDS, when the time passes, then done with the lines sent so far', async () => {
    const { id, file } = startSession(logs);
    const client = SseClient.open(svc.service.url, `/api/v1/logs/session/${id}`);
    await client.waitFor(() => logMessages(client).length === 1, WAIT_MS, 'the first line');
    // A new line half an idle time later resets the idle time: the end comes a whole idle time after
    // it. A lower bound only (a wait the service must make); how much later is the machine's business.
    await new Promise((resolve) => setTimeout(resolve, (IDLE_SECONDS * 1000) / 2));
    appendFileSync(file, entry(id, 'still going'));
    const lastLine = Date.now();
    await client.waitFor(() => client.ended, WAIT_MS, 'the idle timeout');
    expect(Date.now() - lastLine).to.be.at.least(IDLE_SECONDS * 1000 - 100);
    expect(logMessages(client)).to.deep.equal(['started', 'still going']);
    expect(client.events.at(-1)?.data).to.deep.equal({ state: 'complete', total_count: 2 });
    await waitUntil(() => svc.service.logStreams.size === 0, WAIT_MS);
  });

  it('given a client following, when the service shuts down, then its stream ends with the error event and the close does not wait for it', async () => {
    const { id, file } = startSession(logs);
    // Keeps the session busy so the idle timeout does not end the stream first.
    const busy = setInterval(() => appendFileSync(file, entry(id, 'tick')), 200);
    try {
      const client = SseClient.open(svc.service.url, `/api/v1/logs/session/${id}`);
      await client.waitFor(() => logMessages(client).length >= 1, WAIT_MS, 'the first line');
      // A close that waited for the stream would never end (the session never goes idle): the test's timeout would.
      stopped = true;
      await svc.stop();
      await client.waitFor(() => client.ended, WAIT_MS, 'the end of the stream');
      expect(client.events.at(-1)).to.deep.equal({ id: '', event: 'error', data: { message: 'The service is shutting down' } });
    } finally {
      clearInterval(busy);
    }
  });
});

const waitUntil = async (condition: () => boolean, timeoutMs: number, everyMs = 10): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
};
