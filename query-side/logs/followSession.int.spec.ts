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

describe('following a session live (GET /logs/session/{id} while the run goes on)', () => {
  let svc: TestService;
  let logs: string;
  const clients: SseClient[] = [];
  const open = (id: string): SseClient => {
    const client = SseClient.open(svc.service.url, `/api/v1/logs/session/${id}`);
    clients.push(client);
    return client;
  };

  before(async () => {
    // 20 followers from one address below: more than one anonymous address's default share (8).
    svc = await startTestService({ LOG_FOLLOW_IDLE_SECONDS: '30', LOG_STREAMS_PER_ADDRESS: '32' });
    logs = join(svc.dataDir, 'logs');
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(async () => svc.stop());

  it('given a session still running, when followed, then lines written later arrive as they are written (< 1 s) until the session_end line, then done', async () => {
    const { id, file } = startSession(logs);
    const client = open(id);
    await client.waitFor(() => logMessages(client).length === 1, 5000, 'the first line');
    expect(client.events[0]).to.deep.include({ event: 'status', data: { state: 'processing' } });

    const written = Date.now();
    appendFileSync(file, entry(id, 'second line'));
    await client.waitFor(() => logMessages(client).length === 2, 1000, 'the second line within 1 s');
    expect(Date.now() - written).to.be.below(1000);

    // A line of another session of the same second, in the same file: not this stream's.
    appendFileSync(file, entry(newLaui(new Date(Number.parseInt(id.slice(0, 8), 16) * 1000)), 'neighbour'));
    // Through the service's own logger (buffered, drained every 20 ms), as the runner's lines are.
    svc.service.logger.log({ level: 'error', category: 'TASK', step: 'run', message: 'through the logger', session_id: id });
    await client.waitFor(() => logMessages(client).length === 3, 2000, 'the logger line');
    expect(client.ended).to.equal(false);

    svc.service.logger.log({ level: 'info', category: 'TASK_HISTORY', step: 'finish', message: 'Task ended: success', session_id: id, status: 'success', session_end: true });
    await client.waitFor(() => client.ended, 2000, 'the end of the stream');
    expect(client.events.map((event) => event.event)).to.deep.equal(['status', 'log', 'log', 'log', 'log', 'done']);
    expect(logMessages(client)).to.deep.equal(['started', 'second line', 'through the logger', 'Task ended: success']);
    expect(client.events.at(-2)?.data).to.include({ session_end: true, status: 'success', level: 'info' });
    expect(client.events.at(-1)?.data).to.deep.equal({ state: 'complete', total_count: 4 });
    await waitUntil(() => svc.service.logStreams.size === 0, 1000);
  });

  it('given a session that ended long ago without its session_end line, when followed, then its lines and done at once (the idle time counts from the last change)', async () => {
    const { id, file } = startSession(logs);
    appendFileSync(file, entry(id, 'last words'));
    const anHourAgo = new Date(Date.now() - 3600_000);
    utimesSync(file, anHourAgo, anHourAgo);
    const started = Date.now();
    const client = open(id);
    await client.waitFor(() => client.ended, 5000, 'the end of the stream');
    expect(Date.now() - started).to.be.below(5000);
    expect(logMessages(client)).to.deep.equal(['started', 'last words']);
    expect(client.events.at(-1)).to.deep.equal({ id: '', event: 'done', data: { state: 'complete', total_count: 2 } });
  });

  it('given a client following a session, when it disconnects, then its stream, file handle and watcher are freed at once', async function () {
    if (!existsSync('/proc/self/fdinfo')) this.skip();
    // The earlier cases' streams may still be closing, on a session file this one can share (the
    // sessions of one second share a file): counted from a service with no stream open.
    await waitUntil(() => svc.service.logStreams.size === 0, 5000);
    const { id, file } = startSession(logs);
    // A stream already out of the set may still be closing its handle: counted once the count holds still.
    let settled = -1;
    await waitUntil(() => {
      const now = openDescriptors(file);
      const still = now === settled;
      settled = now;
      return still;
    }, 5000, 200);
    const before = { descriptors: openDescriptors(file), watches: watchesOn(file), streams: svc.service.logStreams.size };
    const client = open(id);
    await client.waitFor(() => logMessages(client).length === 1, 5000, 'the first line');
    // Following now: the replay is done and the watcher is set.
    await waitUntil(() => watchesOn(file) === before.watches + 1 && openDescriptors(file) === before.descriptors + 1, 2000);
    expect(svc.service.logStreams.size).to.equal(before.streams + 1);

    const closed = Date.now();
    client.close();
    await waitUntil(() => svc.service.logStreams.size === before.streams && openDescriptors(file) === before.descriptors && watchesOn(file) === before.watches, 2000);
    // "At once": long before the idle timeout (minutes) would have ended the stream. Not held to the
    // poll interval (500 ms): on a loaded machine a prompt release can take longer than that to run.
    expect(Date.now() - closed).to.be.below(2000);
    // A line written afterwards is read by nobody, and nothing fails.
    appendFileSync(file, entry(id, 'after the client left', { session_end: true }));
    const health = await svc.client().get('/healthz');
    expect(health.status).to.equal(200);
  });

  it('given many clients following, when they all leave, then every stream is freed', async () => {
    const { id } = startSession(logs);
    const many = Array.from({ length: 20 }, () => open(id));
    await Promise.all(many.map((client) => client.waitFor(() => logMessages(client).length === 1, 5000, 'the first line')));
    expect(svc.service.logStreams.size).to.be.at.least(20);
    for (const client of many) client.close();
    await waitUntil(() => svc.service.logStreams.size === 0, 2000);
  });
});

describe('following a session: idle timeout and shutdown', () => {
  let svc: TestService;
  let logs: string;
  let stopped = false;

  before(async () => {
    svc = await startTestService({ LOG_FOLLOW_IDLE_SECONDS: '1' });
    logs = join(svc.dataDir, 'logs');
  });
  after(async () => {
    if (!stopped) await svc.stop();
  });

  it('given a followed session with no new line for LOG_FOLLOW_IDLE_SECONDS, when the time passes, then done with the lines sent so far', async () => {
    const { id, file } = startSession(logs);
    const client = SseClient.open(svc.service.url, `/api/v1/logs/session/${id}`);
    await client.waitFor(() => logMessages(client).length === 1, 5000, 'the first line');
    // A new line resets the idle time.
    await new Promise((resolve) => setTimeout(resolve, 600));
    appendFileSync(file, entry(id, 'still going'));
    const lastLine = Date.now();
    await client.waitFor(() => client.ended, 5000, 'the idle timeout');
    const idle = Date.now() - lastLine;
    expect(idle).to.be.within(900, 3000);
    expect(logMessages(client)).to.deep.equal(['started', 'still going']);
    expect(client.events.at(-1)?.data).to.deep.equal({ state: 'complete', total_count: 2 });
    await waitUntil(() => svc.service.logStreams.size === 0, 1000);
  });

  it('given a client following, when the service shuts down, then its stream ends with the error event and the close does not wait for it', async () => {
    const { id, file } = startSession(logs);
    // Keeps the session busy so the idle timeout does not end the stream first.
    const busy = setInterval(() => appendFileSync(file, entry(id, 'tick')), 200);
    try {
      const client = SseClient.open(svc.service.url, `/api/v1/logs/session/${id}`);
      await client.waitFor(() => logMessages(client).length >= 1, 5000, 'the first line');
      const started = Date.now();
      stopped = true;
      await svc.stop();
      expect(Date.now() - started).to.be.below(5000);
      await client.waitFor(() => client.ended, 3000, 'the end of the stream');
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
