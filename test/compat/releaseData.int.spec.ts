import { expect } from 'chai';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startTestService, type TestService } from '../support/testService.ts';
import { copyReleaseData } from '../fixtures/copyReleaseData.ts';
import {
  differences,
  RELEASE_EXPECTED_FILE,
  SCENARIO_ROLES,
  SCENARIO_STATES,
  takeSnapshot,
  type ItemSnapshot,
  type Read,
  type ReleaseFixture,
  type Snapshot,
} from '../fixtures/releaseSnapshot.ts';

/**
 * A data directory written by the release (test/fixtures/release-data, made by
 * test/fixtures/makeReleaseFixture.ts: events.sqlite and keys/) must open with the code under test
 * and read as the release read it (test/fixtures/release-data.expected.json), through the API.
 *
 * Compared as they are: every item (catalog get, revisions list, each revision, diagnose of tasks),
 * the lists and searches (admin and normal user), the connection queues and the cron status. No
 * field is ignored: none of these reads carries a timing or per-run value (the generator checks it
 * by reading twice and again after a reopen). The one exception is item_history's `event`
 * (compareItemHistory): the release stored task lifecycle and cron status changes as ItemUpdated,
 * the next change names them and upcasts the release's events on read.
 */

interface EventRename {
  item_laui: string;
  revision: unknown;
  release: unknown;
  now: unknown;
}

/**
 * GET /catalog/get/item_history of one item, entry by entry, every field but `event` compared.
 * Returns the differences and the entries whose event name changed. The release named only
 * ItemUpdated entries that the next change renames, so a rename of any other event is reported as
 * a difference too. Expected named events (TaskQueued, TaskSucceeded, ...) are asserted on `renames`.
 */
const compareItemHistory = (laui: string, expected: Read, actual: Read): { differences: string[]; renames: EventRename[] } => {
  type Entry = Record<string, unknown> & { event?: unknown; revision?: unknown };
  const entries = (read: Read): Entry[] => (Array.isArray(read.body) ? (read.body as Entry[]) : []);
  const withoutEvent = (read: Read) => ({ status: read.status, body: Array.isArray(read.body) ? entries(read).map(({ event: _event, ...rest }) => rest) : read.body });
  const found = differences(withoutEvent(expected), withoutEvent(actual), `history ${laui}`);
  const renames: EventRename[] = [];
  entries(expected).forEach((entry, index) => {
    const now = entries(actual)[index]?.event;
    if (now === undefined || now === entry.event) return;
    renames.push({ item_laui: laui, revision: entry.revision, release: entry.event, now });
    if (entry.event !== 'ItemUpdated') found.push(`history ${laui} revision ${String(entry.revision)}: ${String(entry.event)} renamed ${String(now)}`);
  });
  return { differences: found, renames };
};

const itemWithoutHistory = ({ history: _history, ...rest }: ItemSnapshot) => rest;

/**
 * Checks GET /task/diagnose gained after the release (issue 36: `backfill_running`): an answer that
 * adds a check, untriggered on the release's data, is the release's answer plus that check. Each is
 * asserted untriggered here, then left out of the comparison.
 */
const CHECKS_SINCE_RELEASE = ['backfill_running'];
const taskWithoutNewChecks = (snapshot: ItemSnapshot | undefined): ItemSnapshot | undefined => {
  const body = snapshot?.diagnose?.body as Record<string, unknown> | undefined;
  if (snapshot === undefined || body === undefined || body === null || typeof body !== 'object') return snapshot;
  const kept = Object.fromEntries(Object.entries(body).filter(([check]) => !CHECKS_SINCE_RELEASE.includes(check)));
  for (const check of CHECKS_SINCE_RELEASE) if (check in body) expect((body[check] as { triggered?: unknown }).triggered, `${snapshot.name} ${check}`).to.equal(false);
  return { ...snapshot, diagnose: { ...snapshot.diagnose!, body: kept } };
};

const readFixture = (): ReleaseFixture => JSON.parse(readFileSync(RELEASE_EXPECTED_FILE, 'utf8')) as ReleaseFixture;

/** The service on `dataDir` (a copy), read as the fixture's admin and user. */
const openAndSnapshot = async (fixture: ReleaseFixture, dataDir: string): Promise<{ svc: TestService; snapshot: Snapshot }> => {
  // No warm processes: nothing runs here, and the start is faster.
  const svc = await startTestService({ ADMIN_PASSWORD: fixture.credentials.admin.password, WORKER_POOL_SIZE: '0' }, {}, dataDir);
  try {
    const adminToken = (await svc.login(fixture.credentials.admin.username, fixture.credentials.admin.password)).token;
    const userToken = (await svc.login(fixture.credentials.user.username, fixture.credentials.user.password)).token;
    const snapshot = await takeSnapshot({ client: svc.client(), adminToken, userToken, projects: Object.values(fixture.projects) });
    return { svc, snapshot };
  } catch (error) {
    await svc.stop();
    throw error;
  }
};

describe('release data: a DATA_DIR written by the release opens and reads the same (test/fixtures/release-data)', function () {
  this.timeout(60_000);
  const fixture = readFixture();
  const expected = fixture.snapshot;
  let svc: TestService;
  let actual: Snapshot;

  before(async () => {
    ({ svc, snapshot: actual } = await openAndSnapshot(fixture, copyReleaseData()));
  });
  after(async () => svc?.stop());

  it('given a copy with the modes git checks out (0644, 0755), when the service opens it, then DATA_DIR, keys/ and the log are private again', () => {
    const mode = (path: string) => statSync(join(svc.dataDir, path)).mode & 0o777;
    expect([mode('.'), mode('keys'), mode('keys/encryption.key'), mode('keys/jwt-private.pem'), mode('events.sqlite')]).to.deep.equal([0o700, 0o700, 0o600, 0o600, 0o600]);
  });

  it("given the scenario tasks, when read, then each is in the state the release left it in (the fixture's roles)", () => {
    const states = Object.fromEntries(SCENARIO_ROLES.map((role) => [role, (actual.items[fixture.roles[role]]?.get.body as { state?: string } | undefined)?.state]));
    expect(states).to.deep.equal(SCENARIO_STATES);
    expect((actual.items[fixture.cron_project]?.get.body as { folder_metadata?: unknown }).folder_metadata).to.include({ cron_status: 'STOPPED' });
  });

  it('given every task, when read (catalog get, diagnose, revisions and each revision), then each reads as the release read it', () => {
    const tasks = Object.keys(expected.items).filter((laui) => expected.items[laui]?.item_type === 'task');
    expect(tasks).to.have.length(SCENARIO_ROLES.length);
    const found = tasks.flatMap((laui) => {
      const now = taskWithoutNewChecks(actual.items[laui]);
      return differences(itemWithoutHistory(expected.items[laui]!), now && itemWithoutHistory(now), `task ${laui}`);
    });
    expect(found).to.deep.equal([]);
  });

  it('given every other item (folders, connections, operators, the cron project...), when read, then each reads as the release read it', () => {
    expect(Object.keys(actual.items)).to.have.members(Object.keys(expected.items));
    const others = Object.keys(expected.items).filter((laui) => expected.items[laui]?.item_type !== 'task');
    const found = others.flatMap((laui) => differences(itemWithoutHistory(expected.items[laui]!), actual.items[laui] && itemWithoutHistory(actual.items[laui]), `item ${laui}`));
    expect(found).to.deep.equal([]);
  });

  it('given the lists and searches (admin and user, by state, children, links, ready to run), when read, then they are the same', () => {
    expect(differences(expected.lists, actual.lists, 'lists')).to.deep.equal([]);
  });

  it('given the connection queues, when read, then the same: the waiting task still waits on the closed connection', () => {
    expect(differences(expected.queues, actual.queues, 'queues')).to.deep.equal([]);
    expect(actual.queues[fixture.connections.narrow!]).to.include({ max_parallelism: 0, current_parallelism: 0, in_queue: 1 });
    expect(actual.queues[fixture.connections.narrow!]?.queue_waiting).to.deep.equal([fixture.roles.waiting]);
  });

  it('given the project whose cron was started and stopped, when its cron status is read, then it is the same', () => {
    expect(differences(expected.cron, actual.cron, 'cron')).to.deep.equal([]);
  });

  it('given every item history, when read, then every entry is the same but for its event name, and only ItemUpdated entries may be renamed', () => {
    const compared = Object.keys(expected.items).map((laui) => compareItemHistory(laui, expected.items[laui]!.history, actual.items[laui]?.history ?? { status: 0, body: null }));
    expect(compared.flatMap((result) => result.differences)).to.deep.equal([]);
  });

  /** The lifecycle events of one item's history, in order (catalog field edits and creation left out). */
  const lifecycleOf = (laui: string): unknown[] =>
    ((actual.items[laui]?.history.body as Array<{ event: string }> | undefined) ?? []).map((entry) => entry.event).filter((event) => /^(Task|Cron)/.test(event));

  it('given each scenario task, when its history is read, then the release\'s ItemUpdated lifecycle reads as the named events', () => {
    const run = ['TaskQueued', 'TaskDispatched', 'TaskStarted'];
    expect(lifecycleOf(fixture.roles.success!)).to.deep.equal([...run, 'TaskSucceeded', ...run, 'TaskSucceeded']);
    expect(lifecycleOf(fixture.roles.retry!)).to.deep.equal([...run, 'TaskErrored', ...run, 'TaskErrored']);
    expect(lifecycleOf(fixture.roles.timeout!)).to.deep.equal([...run, 'TaskTimedOut']);
    expect(lifecycleOf(fixture.roles.cancel!)).to.deep.equal([...run, 'TaskCancellationRequested', 'TaskCancelled']);
    expect(lifecycleOf(fixture.roles.fail!)).to.deep.equal([...run, 'TaskFailed']);
    expect(lifecycleOf(fixture.roles.reset!)).to.deep.equal([...run, 'TaskSucceeded', 'TaskReset']);
    expect(lifecycleOf(fixture.roles.skipped!)).to.deep.equal(['TaskSkipped']);
    expect(lifecycleOf(fixture.roles.waiting!)).to.deep.equal(['TaskQueued']);
    expect(lifecycleOf(fixture.cron_project)).to.deep.equal(['CronStarted', 'CronLoopStarted', 'CronStopRequested', 'CronStopped']);
  });
});

describe('release data: the comparison fails on a changed event', function () {
  this.timeout(60_000);
  const fixture = readFixture();
  let svc: TestService | undefined;
  after(async () => svc?.stop());

  it("given a copy whose timeout task's terminal event says error, when opened and read, then the task, its history and the lists differ", async () => {
    const dataDir = copyReleaseData();
    const timeout = fixture.roles.timeout;
    const db = new Database(join(dataDir, 'events.sqlite'));
    const changed = db
      .prepare("UPDATE events SET data = json_set(data, '$.changes.state', 'error') WHERE stream_id = ? AND json_extract(data, '$.changes.state') = 'timeout'")
      .run(`item-${timeout}`).changes;
    db.close();
    expect(changed).to.equal(1);
    const opened = await openAndSnapshot(fixture, dataDir);
    svc = opened.svc;
    const expected = fixture.snapshot;
    const task = differences(itemWithoutHistory(expected.items[timeout]!), itemWithoutHistory(opened.snapshot.items[timeout]!), 'task');
    expect(task).to.include('task.get.body.state: "timeout" -> "error"');
    expect(compareItemHistory(timeout, expected.items[timeout]!.history, opened.snapshot.items[timeout]!.history).differences).to.have.length(1);
    expect(differences(expected.lists, opened.snapshot.lists, 'lists')).to.not.deep.equal([]);
  });
});
