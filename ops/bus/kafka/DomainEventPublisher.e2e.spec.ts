import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { metadataFor } from '../../../shared/events.ts';
import { requireKafkaBroker } from '../../../test/support/kafkaBroker.ts';
import { MemoryEventStore } from '../../../test/support/MemoryEventStore.ts';
import { waitUntil } from '../../../test/support/waitUntil.ts';
import { fileCheckpoint, kafkaDomainEventSink, publishDomainEvents } from './DomainEventPublisher.ts';

const meta = metadataFor('65a000000000000000000001', new Date('2026-01-02T03:04:05Z'), 'corr-1');

interface Received {
  partition: number;
  key: string;
  position: number;
  headerPosition: string;
  envelope: { position: number; stream: string; type: string; data: { index: number } };
}

/**
 * The `domain-events` publisher against a live broker (TEST_KAFKA_BROKERS, else testcontainers,
 * else skipped; failed in CI): what an analyst's own consumer of the topic reads. The topic is
 * unique per run (the service's is `domain-events`) so that runs sharing a broker do not mix.
 */
describe('domain-events publisher against a Kafka broker', function () {
  this.timeout(300_000);
  let brokers: string[] = [];
  let dir: string;
  let topic: string;
  let reader: Consumer | null = null;
  const received: Received[] = [];

  before(async function () {
    ({ brokers } = await requireKafkaBroker(this));
  });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'domain-events-e2e-'));
    topic = `domain-events-${randomUUID()}`;
    received.length = 0;
  });

  afterEach(async () => {
    await reader?.disconnect();
    reader = null;
    rmSync(dir, { recursive: true, force: true });
  });

  /** An analyst's consumer of the topic, from its beginning, in a group of its own. */
  const readTopic = async () => {
    const kafka = new Kafka({ clientId: `analyst-${randomUUID()}`, brokers, logLevel: logLevel.NOTHING });
    reader = kafka.consumer({ groupId: `analyst-${randomUUID()}`, maxWaitTimeInMs: 500 });
    await reader.connect();
    await reader.subscribe({ topics: [topic], fromBeginning: true });
    await reader.run({
      eachMessage: async ({ partition, message }) => {
        const envelope = JSON.parse(String(message.value)) as Received['envelope'];
        received.push({ partition, key: String(message.key), position: envelope.position, headerPosition: String(message.headers?.['event-position']), envelope });
      },
    });
  };

  const sink = () => kafkaDomainEventSink({ brokers, clientId: `publisher-${randomUUID()}`, topic });

  it('given a log of several streams, when published, stopped, appended to and published again, then every event arrives once, each stream in log order, the restart resuming at its checkpoint', async () => {
    const store = new MemoryEventStore();
    const streams = ['task-a', 'task-b', 'user-c', 'project-d'];
    // More than one batch (500): interleaved streams, so log order and per-stream order differ.
    for (let index = 0; index < 1200; index += 1) {
      await store.append(streams[index % streams.length] ?? 'task-a', [{ type: 'Probed', data: { index }, metadata: meta }], 'any');
    }
    const checkpoint = fileCheckpoint(join(dir, 'domain-events.checkpoint'));
    const first = publishDomainEvents({ eventStore: store, sink: await sink(), checkpoint });
    await readTopic();
    // Counted by position: a record written twice must not pass for a missing one.
    const distinct = () => new Set(received.map(({ position }) => position)).size;
    await waitUntil(() => distinct() >= 1200, 'the 1200 events are read from the topic', 60_000);
    await first.close();
    expect(checkpoint.read()).to.equal(1200n);

    for (let index = 1200; index < 1210; index += 1) {
      await store.append(streams[index % streams.length] ?? 'task-a', [{ type: 'Probed', data: { index }, metadata: meta }], 'any');
    }
    const second = publishDomainEvents({ eventStore: store, sink: await sink(), checkpoint });
    await waitUntil(() => distinct() >= 1210, 'the 10 later events are read from the topic', 60_000);
    await second.close();
    // Anything published twice would show up by now.
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    const positions = received.map(({ position }) => position);
    expect([...positions].sort((a, b) => a - b), 'each event once').to.deep.equal(Array.from({ length: 1210 }, (_, index) => index + 1));
    for (const stream of streams) {
      const ofStream = received.filter(({ key }) => key === stream);
      expect(ofStream.map(({ envelope }) => envelope.stream)).to.satisfy((names: string[]) => names.every((name) => name === stream));
      const order = ofStream.map(({ position }) => position);
      expect(order, `${stream} in log order`).to.deep.equal([...order].sort((a, b) => a - b));
      expect(new Set(ofStream.map(({ partition }) => partition)).size, `${stream} on one partition`).to.equal(1);
    }
    for (const record of received) {
      expect(record.headerPosition).to.equal(String(record.position));
      expect(record.envelope.data.index).to.equal(record.position - 1);
    }
    expect(checkpoint.read()).to.equal(1210n);
  });
});
