import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message } from 'kafkajs';
import { metadataFor } from '../../../shared/events.ts';
import { START, type Position } from '../../../shared/event-store/EventStore.ts';
import { MemoryEventStore } from '../../../test/support/MemoryEventStore.ts';
import { loadConfig } from '../../config.ts';
import { domainEventRecord, fileCheckpoint, publishDomainEvents, startDomainEventPublishing, type DomainEventSink } from './DomainEventPublisher.ts';

const meta = metadataFor('65a000000000000000000001', new Date('2026-01-02T03:04:05Z'), 'corr-1');

const arraySink = (): DomainEventSink & { records: Message[]; failNext: number } => {
  const sink = {
    records: [] as Message[],
    failNext: 0,
    send: async (records: Message[]) => {
      if (sink.failNext > 0) {
        sink.failNext -= 1;
        throw new Error('broker unavailable');
      }
      sink.records.push(...records);
    },
    close: async () => {},
  };
  return sink;
};

const waitUntil = async (condition: () => boolean, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('domain-events publisher (Kafka mode)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'domain-events-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('given a UserCreated, when turned into a record, then it is keyed by stream and holds the redacted envelope', async () => {
    const store = new MemoryEventStore();
    await store.append(
      'user-65a000000000000000000002',
      [{ type: 'UserCreated', data: { laui: '65a000000000000000000002', username: 'ada', email: 'a@example.com', password_hash: 'scrypt$secret-hash', must_change_password: false, is_admin: false }, metadata: meta }],
      'no_stream',
    );
    const [event] = await store.readAll();
    if (!event) throw new Error('no event');
    const record = domainEventRecord(event);
    expect(record.key).to.equal('user-65a000000000000000000002');
    expect(record.headers).to.deep.equal({ 'event-type': 'UserCreated', 'event-position': String(event.position) });
    expect(JSON.parse(String(record.value))).to.deep.equal({
      position: Number(event.position),
      stream: 'user-65a000000000000000000002',
      revision: 0,
      type: 'UserCreated',
      version: 1,
      data: { laui: '65a000000000000000000002', username: 'ada', email: 'a@example.com', password_hash: '********', must_change_password: false, is_admin: false },
      metadata: { user_laui: '65a000000000000000000001', at: '2026-01-02T03:04:05.000Z', correlation_id: 'corr-1', causation_id: null },
    });
    expect(String(record.value)).to.not.include('secret-hash');
  });

  it('given events, when published, stopped and restarted, then each is sent once in log order and the restart resumes at the checkpoint', async () => {
    const store = new MemoryEventStore();
    const checkpoint = fileCheckpoint(join(dir, 'domain-events.checkpoint'));
    expect(checkpoint.read()).to.equal(START);
    await store.append('probe-1', Array.from({ length: 1200 }, (_, index) => ({ type: 'Probed', data: { index }, metadata: meta })), 'any');
    const first = arraySink();
    const publisher = publishDomainEvents({ eventStore: store, sink: first, checkpoint });
    await waitUntil(() => first.records.length === 1200);
    await store.append('probe-2', [{ type: 'Probed', data: { index: 1200 }, metadata: meta }], 'any');
    await waitUntil(() => first.records.length === 1201);
    await publisher.close();
    expect(first.records.map((record) => String(record.key))).to.include('probe-2');
    const positions = first.records.map((record) => Number(JSON.parse(String(record.value)).position));
    expect(positions).to.deep.equal(Array.from({ length: 1201 }, (_, index) => index + 1));
    expect(checkpoint.read()).to.equal(1201n as Position);

    await store.append('probe-2', [{ type: 'Probed', data: { index: 1201 }, metadata: meta }], 'any');
    const second = arraySink();
    second.failNext = 1;
    const restarted = publishDomainEvents({ eventStore: store, sink: second, checkpoint, retryDelayMs: 10 });
    await waitUntil(() => second.records.length >= 1);
    await restarted.close();
    expect(second.records.map((record) => JSON.parse(String(record.value)).position)).to.deep.equal([1202]);
  });

  it('given the in-process bus (the default), when the service starts publishing, then nothing is created nor sent', async () => {
    const store = new MemoryEventStore();
    await store.append('probe-1', [{ type: 'Probed', data: {}, metadata: meta }], 'any');
    let sinks = 0;
    const publisher = await startDomainEventPublishing(loadConfig({ DATA_DIR: dir }).bus, {
      eventStore: store,
      dataDir: dir,
      sinkFor: async () => {
        sinks += 1;
        return arraySink();
      },
    });
    expect(publisher).to.equal(null);
    expect(sinks).to.equal(0);
  });

  it('given BUS=kafka, when the service starts publishing, then its sink gets the brokers and the log', async () => {
    const store = new MemoryEventStore();
    await store.append('probe-1', [{ type: 'Probed', data: {}, metadata: meta }], 'any');
    const sink = arraySink();
    let brokers: ReadonlyArray<string> = [];
    const publisher = await startDomainEventPublishing(loadConfig({ BUS: 'kafka', KAFKA_BROKERS: 'k1:9092' }).bus, {
      eventStore: store,
      dataDir: dir,
      sinkFor: async (given) => {
        brokers = given;
        return sink;
      },
    });
    await waitUntil(() => sink.records.length === 1);
    await publisher?.close();
    expect(brokers).to.deep.equal(['k1:9092']);
    expect(String(sink.records[0]?.key)).to.equal('probe-1');
  });
});
