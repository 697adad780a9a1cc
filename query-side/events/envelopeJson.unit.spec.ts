import { expect } from 'chai';
import { STORED_DATA_JSON, type RecordedEvent } from '../../shared/event-store/EventStore.ts';
import { toEnvelope } from './eventEnvelope.ts';
import { envelopeJson } from './envelopeJson.ts';
import { sseFrame } from './EventStreams.ts';

const hash = 'ab'.repeat(32);
const metadata = { user_laui: '65a000000000000000000001', correlation_id: 'c1', causation_id: null, at: '2026-01-01T00:00:00.000Z' };
const sealed = { $sealed: { v: 1, iv: 'aXY', tag: 'dGFn', ct: 'Y2lwaGVydGV4dA' }, keys: ['host', 'password'], shown: { host: 'db', password: '********' } };
/** Strings JSON.stringify escapes (or must not): quotes, controls, lone and paired surrogates, line separators. */
const odd = ['quote " in', 'back\\slash', 'new\nline', 'tab\t\r', 'nul\u0000', 'lone \ud800', 'low \udc00', 'pair \ud83d\ude00', 'sep \u2028\u2029', 'del \u007f', 'ünï', ''];

const recorded = (over: Partial<Record<keyof RecordedEvent, unknown>> = {}): RecordedEvent =>
  ({ id: 'e', streamId: 'item-i1', revision: 3, position: 42n, type: 'ItemUpdated', data: { a: 1 }, metadata, recordedAt: 'x', ...over }) as RecordedEvent;

/** The frame as it was written before envelopeJson: what a client received, byte for byte. */
const frameBefore = (event: RecordedEvent): string => {
  const envelope = toEnvelope(event);
  return `id: ${envelope.position}\nevent: ${envelope.type.replace(/[\r\n]/g, ' ')}\ndata: ${JSON.stringify(envelope)}\n\n`;
};

describe('envelopeJson (the SSE data line)', () => {
  const events: RecordedEvent[] = [
    recorded(),
    recorded({ data: { laui: 'i1', item_type: 'connection', fields: { content: sealed, max_parallelism: 4 } }, type: 'ItemCreated', revision: 0 }),
    recorded({ data: { password_hash: 'scrypt$1', must_change_password: true }, streamId: 'user-u1', type: 'UserCreated' }),
    recorded({ data: { changes: { config: { api_key: 'sk', 'Pass-Word': 'p', dsn: 'postgres://u:pw@h/db', token_limit: 5 } } } }),
    recorded({ data: { numbers: [0, -0, 1e21, 1e-7, 0.1, 2 ** 53, -5.5], empty: {}, list: [], t: true, f: false, n: null } }),
    ...odd.map((text) => recorded({ data: { text, [text]: [text] }, streamId: `s-${text}`, type: `T${text}` })),
    recorded({ streamId: `authcode-${hash}`, type: 'AuthorizationCodeIssued' }),
    recorded({ streamId: `refresh-${hash}`, type: 'RefreshTokenIssued' }),
    recorded({ metadata: { ...metadata, causation_id: 'c0' } }),
    recorded({ metadata: { ...metadata, user_laui: null } }),
    recorded({ metadata: { ...metadata, version: 3 } }),
    recorded({ metadata: { ...metadata, at: 'odd "at"\n' } }),
    // Old events without some metadata fields: JSON.stringify leaves the keys out.
    recorded({ metadata: { user_laui: 'u', at: '2026-01-01T00:00:00.000Z' } }),
    recorded({ metadata: { ...metadata, correlation_id: 7 } }),
    recorded(),
    // Values a store should never return: the envelope is still what JSON.stringify makes of it.
    recorded({ revision: Number.NaN }),
    recorded({ data: undefined }),
    recorded({ position: 2n ** 60n }),
  ];

  it('given events of every shape, in a row (the kept metadata and stream reused or not), then it is JSON.stringify of the envelope, byte for byte', () => {
    for (const order of [events, [...events].reverse(), events.flatMap((event) => [event, event])]) {
      for (const event of order) {
        const envelope = toEnvelope(event);
        expect(envelopeJson(envelope)).to.equal(JSON.stringify(envelope));
      }
    }
  });

  it('given the same events, then each SSE frame is the one written before, and redaction still applies', () => {
    for (const event of events) expect(sseFrame(event)).to.equal(frameBefore(event));
    const frames = events.map(sseFrame).join('');
    for (const secret of ['Y2lwaGVydGV4dA', 'scrypt$1', '"sk"', ':pw@', hash]) expect(frames).to.not.include(secret);
  });
});

describe('sseFrame with the text the store decoded the data from (STORED_DATA_JSON)', () => {
  /** An event as the SQLite store decodes it: its data parsed from `text`, the text kept beside it. */
  const decoded = (text: string, over: Partial<Record<keyof RecordedEvent, unknown>> = {}): RecordedEvent =>
    ({ ...recorded(over), data: JSON.parse(text) as Record<string, unknown>, [STORED_DATA_JSON]: text }) as RecordedEvent;

  it('given an event with nothing to redact or upcast, when framed, then the stored text is the data, byte for byte what JSON.stringify would write', () => {
    const event = decoded(JSON.stringify({ changes: { description: 'd' }, version: 2, revision_laui: null }), { metadata: { ...metadata, version: 2 } });
    const marked = decoded(JSON.stringify({ changes: { description: 'd' }, version: 2, revision_laui: null }).replace('"d"', '"d"'), { metadata: { ...metadata, version: 2 } });
    expect(sseFrame(event)).to.equal(frameBefore(event));
    // The stored text is what is written (a text that differs from the data in whitespace shows it).
    (marked as unknown as Record<symbol, string>)[STORED_DATA_JSON] = '{"changes": {"description":"d"},"version":2,"revision_laui":null}';
    expect(sseFrame(marked)).to.include('data: {"position":42,"stream":"item-i1","revision":3,"type":"ItemUpdated","version":2,"data":{"changes": {"description":"d"}');
  });

  it('given a stored text holding a secret, when framed, then the redacted data is written, never the stored text', () => {
    const event = decoded(JSON.stringify({ password_hash: 'scrypt$secret', username: 'u' }), { streamId: 'user-u1', type: 'UserCreated' });
    const frame = sseFrame(event);
    expect(frame).not.to.include('scrypt$secret');
    expect(frame).to.equal(frameBefore(event));
  });

  it('given a version-1 task change, when framed, then the upcast named event is written, not the stored ItemUpdated text', () => {
    const event = decoded(JSON.stringify({ changes: { state: 'running', iteration: 1 }, version: 1, revision_laui: null }));
    const frame = sseFrame(event);
    expect(frame).to.include('event: TaskStarted');
    expect(frame).to.include('"from":null,"to":"running"');
    expect(frame).to.equal(frameBefore(event));
  });
});
