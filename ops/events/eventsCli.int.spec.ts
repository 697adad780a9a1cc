import { expect } from 'chai';
import { execFile, spawn } from 'node:child_process';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { metadataFor } from '../../shared/events.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';

const run = promisify(execFile);

const cli = (dataDir: string, ...args: string[]) =>
  run(process.execPath, ['--import', 'tsx', 'ops/cli.ts', ...args], { env: { ...process.env, DATA_DIR: dataDir }, cwd: process.cwd() });

const waitUntil = async (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('CLI: auditors and the event log (beside a running service on the same DATA_DIR)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
    await svc.service.eventStore.append(
      'probe-cli',
      Array.from({ length: 30 }, (_, index) => ({ type: index % 3 === 0 ? 'CliProbed' : 'CliNoted', data: { index, password: 'probe-secret-1' }, metadata: metadataFor(null, new Date(), 'probe') })),
      'any',
    );
  });
  after(async () => svc.stop());

  it('given user create --auditor and user grant-auditor, when those users read GET /events, then both may', async () => {
    await cli(svc.dataDir, 'user', 'create', '--username', 'cli-auditor', '--email', 'c@example.com', '--password', 'cli-password-1', '--auditor');
    await cli(svc.dataDir, 'user', 'create', '--username', 'cli-plain', '--email', 'p@example.com', '--password', 'cli-password-1');
    const readsEvents = async (username: string): Promise<number> => {
      const { token } = await svc.login(username, 'cli-password-1');
      return (await svc.client().get('/api/v1/events?limit=1', { token })).status;
    };
    await waitUntil(async () => (await svc.service.readStore.collection('users').find({ where: { username_key: 'cli-plain' } })).length === 1, 'the CLI users');
    expect(await readsEvents('cli-auditor')).to.equal(200);
    expect(await readsEvents('cli-plain')).to.equal(403);
    const { stdout } = await cli(svc.dataDir, 'user', 'grant-auditor', '--username', 'CLI-Plain');
    expect(JSON.parse(stdout)).to.include({ is_auditor: true });
    await waitUntil(async () => (await readsEvents('cli-plain')) === 200, 'the grant to reach the service');
    const missing = await cli(svc.dataDir, 'user', 'grant-auditor', '--username', 'nobody').then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(missing?.code).to.equal(1);
    expect(missing?.stderr).to.include('404');
  });

  it('given events, when exported as JSON lines with --type and --from/--to, then the file holds exactly those, redacted', async () => {
    const all = (await svc.service.eventStore.readAll({ maxCount: 100_000 })).filter((event) => event.streamId === 'probe-cli');
    const from = Number(all[0]?.position) - 1;
    const to = Number(all[20]?.position);
    const out = join(svc.dataDir, 'export.jsonl');
    const { stdout } = await cli(svc.dataDir, 'events', 'export', '--from', String(from), '--to', String(to), '--type', 'CliProbed', '--format', 'jsonl', '--out', out);
    const lines = readFileSync(out, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { position: number; type: string; data: Record<string, unknown> });
    expect(lines.map((line) => line.data.index)).to.deep.equal([0, 3, 6, 9, 12, 15, 18]);
    expect(lines.every((line) => line.type === 'CliProbed' && line.data.password === '********')).to.equal(true);
    expect(JSON.parse(stdout)).to.deep.include({ events: 7, last_position: to });
    expect(existsSync(`${out}.partial`)).to.equal(false);
  });

  it('given events, when exported to a .parquet file without --format, then the file is Parquet: DuckDB reads the envelopes back', async () => {
    const out = join(svc.dataDir, 'export.parquet');
    const { stdout } = await cli(svc.dataDir, 'events', 'export', '--type', 'CliProbed', '--out', out);
    expect(JSON.parse(stdout)).to.deep.include({ format: 'parquet', events: 10 });
    expect(readFileSync(out).subarray(0, 4).toString()).to.equal('PAR1');
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll(
        `SELECT count(*)::INTEGER AS n, min(stream) AS stream, max(version) AS version, bool_and(json_extract_string(data, '$.password') = '********') AS masked, min(metadata.correlation_id) AS correlation FROM read_parquet('${out}')`,
      );
      expect(reader.getRowObjects()[0]).to.deep.equal({ n: 10, stream: 'probe-cli', version: 1, masked: true, correlation: 'probe' });
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
    expect(readFileSync(out).includes('probe-secret-1')).to.equal(false);
  });

  it('given events, when exported to a .csv file, then DuckDB reads one row per event with the metadata as columns, redacted', async () => {
    const out = join(svc.dataDir, 'export.csv');
    const { stdout } = await cli(svc.dataDir, 'events', 'export', '--type', 'CliProbed', '--out', out);
    expect(JSON.parse(stdout)).to.deep.include({ format: 'csv', events: 10 });
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll(
        `SELECT count(*)::INTEGER AS n, min(stream) AS stream, bool_and(json_extract_string(data, '$.password') = '********') AS masked, min(correlation_id) AS correlation FROM read_csv('${out}', header = true)`,
      );
      expect(reader.getRowObjects()[0]).to.deep.equal({ n: 10, stream: 'probe-cli', masked: true, correlation: 'probe' });
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
    expect(readFileSync(out, 'utf8').split('\n')[0]).to.equal('position,stream,revision,type,version,data,user_laui,at,correlation_id,causation_id');
  });

  it('given --out events.ndjson, when exported without --format, then the file is JSON lines', async () => {
    const out = join(svc.dataDir, 'export.ndjson');
    const { stdout } = await cli(svc.dataDir, 'events', 'export', '--type', 'CliProbed', '--out', out);
    expect(JSON.parse(stdout)).to.deep.include({ format: 'jsonl', events: 10 });
    expect(readFileSync(out, 'utf8').trim().split('\n').map((line) => (JSON.parse(line) as { type: string }).type)).to.have.length(10);
  });

  it('given an extension that names no format, or one that contradicts --format, when exporting, then it exits 1 naming the file and writes nothing', async () => {
    const unknown = join(svc.dataDir, 'export.txt');
    const conflicting = join(svc.dataDir, 'conflict.parquet');
    const failures = await Promise.all(
      [
        ['--out', unknown],
        ['--out', conflicting, '--format', 'jsonl'],
      ].map((args) => cli(svc.dataDir, 'events', 'export', ...args).then(() => null, (error: { code: number; stderr: string }) => error)),
    );
    expect(failures[0]?.code).to.equal(1);
    expect(failures[0]?.stderr).to.include(`error: cannot tell the format of ${unknown} from its extension: name the file .jsonl, .ndjson, .parquet, .csv, or give --format`);
    expect(failures[1]?.code).to.equal(1);
    expect(failures[1]?.stderr).to.include(`error: --format jsonl conflicts with the extension of ${conflicting} (parquet)`);
    expect(existsSync(unknown) || existsSync(conflicting) || existsSync(`${conflicting}.partial`)).to.equal(false);
  });

  it('given events recorded less than a day ago, when archived --older-than 1d, then nothing is written', async () => {
    const dir = join(svc.dataDir, 'archive-recent');
    const { stdout } = await cli(svc.dataDir, 'events', 'archive', '--older-than', '1d', '--out', dir);
    expect(JSON.parse(stdout)).to.deep.include({ file: null, events: 0, from: 0, last: 0 });
    expect(readdirSync(dir)).to.deep.equal([]);
  });

  it('given events, when archived twice with new events in between, then each run writes the events after the previous file, DuckDB reads the directory as one redacted log, and the live log keeps them all', async function () {
    // Three CLI processes, each loading DuckDB.
    this.timeout(120_000);
    const dir = join(svc.dataDir, 'archive');
    const first = JSON.parse((await cli(svc.dataDir, 'events', 'archive', '--older-than', '0s', '--out', dir)).stdout) as { file: string; events: number; last: number };
    expect(first.file).to.equal(join(dir, `events-1-${first.last}.parquet`));
    expect(first.events).to.equal(first.last);
    await svc.service.eventStore.append('probe-archive', [{ type: 'CliArchived', data: { password: 'probe-secret-2' }, metadata: metadataFor(null, new Date(), 'probe') }], 'no_stream');
    const head = Number(await svc.service.eventStore.headPosition());
    const second = JSON.parse((await cli(svc.dataDir, 'events', 'archive', '--older-than', '0s', '--out', dir)).stdout) as { file: string; events: number; from: number; last: number };
    expect(second).to.deep.include({ from: first.last, file: join(dir, `events-${first.last + 1}-${second.last}.parquet`) });
    expect(second.last).to.be.at.least(head);
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll(
        `SELECT count(*)::INTEGER AS n, count(DISTINCT position)::INTEGER AS positions, max(position)::INTEGER AS last, bool_and(json_extract_string(data, '$.password') = '********') FILTER (WHERE stream LIKE 'probe-%') AS masked FROM read_parquet('${dir}/events-*.parquet')`,
      );
      expect(reader.getRowObjects()[0]).to.deep.equal({ n: second.last, positions: second.last, last: second.last, masked: true });
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
    expect((await svc.service.eventStore.readAll({ maxCount: 10 }))[0]?.position, 'the live log still starts at 1').to.equal(1n);
    const bad = await cli(svc.dataDir, 'events', 'archive', '--older-than', '90 days', '--out', dir).then(() => null, (error: { code: number; stderr: string }) => error);
    expect(bad?.code).to.equal(1);
    expect(bad?.stderr).to.include('older-than must be a number and a unit');
  });

  it('given events tail, when the service appends an event, then the tail prints it', async () => {
    const tail = spawn(process.execPath, ['--import', 'tsx', 'ops/cli.ts', 'events', 'tail', '--type', 'TailProbed'], {
      env: { ...process.env, DATA_DIR: svc.dataDir },
      cwd: process.cwd(),
    });
    let output = '';
    tail.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      // The tail starts at the head: keep appending until its start-up is over and it prints one.
      await waitUntil(async () => {
        await svc.service.eventStore.append('probe-tail', [{ type: 'TailProbed', data: { token: 'tail-secret' }, metadata: metadataFor(null, new Date(), 'probe') }], 'any');
        await new Promise((resolve) => setTimeout(resolve, 300));
        return output.includes('\n');
      }, 'a tailed line');
      const first = JSON.parse(output.split('\n')[0] ?? '') as { type: string; stream: string; data: Record<string, unknown> };
      expect(first).to.deep.include({ type: 'TailProbed', stream: 'probe-tail', data: { token: '********' } });
    } finally {
      tail.kill('SIGINT');
    }
    const code = await new Promise<number | null>((resolve) => tail.once('exit', (exitCode) => resolve(exitCode)));
    expect(code).to.equal(0);
  });
});
