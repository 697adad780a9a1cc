import type { EventEnvelope } from './eventEnvelope.ts';

/** A stream's events come in runs (one append's, one item's history): the last stream's JSON is kept. */
let lastStream = '';
let lastStreamJson = '""';
const streamJson = (stream: string): string => {
  if (stream !== lastStream) {
    lastStreamJson = JSON.stringify(stream);
    lastStream = stream;
  }
  return lastStreamJson;
};

/** Event types are a few dozen names: each one's JSON is kept (bounded, as types are only data to this code). */
const typeJsons = new Map<string, string>();
const typeJson = (type: string): string => {
  let json = typeJsons.get(type);
  if (json === undefined) {
    if (typeJsons.size >= 1000) typeJsons.clear();
    json = JSON.stringify(type);
    typeJsons.set(type, json);
  }
  return json;
};

const isTextOrNull = (value: unknown): value is string | null => value === null || typeof value === 'string';

/**
 * The events of one command share their metadata and follow each other in the log: the last
 * metadata's JSON is kept, keyed on its four values (strings or null, compared by value).
 */
let lastMetadata: EventEnvelope['metadata'] | undefined;
let lastMetadataJson = '';
const metadataJson = (metadata: EventEnvelope['metadata']): string => {
  const { user_laui, at, correlation_id, causation_id } = metadata;
  const last = lastMetadata;
  if (
    last !== undefined &&
    user_laui === last.user_laui &&
    at === last.at &&
    correlation_id === last.correlation_id &&
    causation_id === last.causation_id
  ) {
    return lastMetadataJson;
  }
  // Only plain values are kept: anything else (a field missing in an old event) is serialized as it is.
  if (!isTextOrNull(user_laui) || !isTextOrNull(at) || !isTextOrNull(correlation_id) || !isTextOrNull(causation_id)) return JSON.stringify(metadata);
  lastMetadata = { user_laui, at, correlation_id, causation_id };
  lastMetadataJson = JSON.stringify(lastMetadata);
  return lastMetadataJson;
};

/**
 * JSON.stringify(envelope) for an envelope made by toEnvelope, the same text to the byte: only the
 * data goes through JSON.stringify, the fixed shape around it is a template. Stringifying the
 * whole envelope cost nearly as much again as its data (its seven fields and the metadata object,
 * ~0.75 against ~0.9 µs an event). A value of a type the envelope does not declare (a store
 * returning odd rows) takes JSON.stringify(envelope) itself. envelopeJson.unit.spec.ts holds it to
 * JSON.stringify, so a field added to EventEnvelope fails there rather than going unserved.
 */
export const envelopeJson = (
  envelope: EventEnvelope,
  /** JSON.stringify(envelope.data) already made: the text the store decoded `data` from (STORED_DATA_JSON). */
  storedDataJson?: string,
): string => {
  const { position, stream, revision, type, version, data, metadata } = envelope;
  const dataJson = storedDataJson ?? (JSON.stringify(data) as string | undefined);
  if (
    dataJson === undefined ||
    !Number.isFinite(position) ||
    !Number.isFinite(revision) ||
    !Number.isFinite(version) ||
    typeof stream !== 'string' ||
    typeof type !== 'string' ||
    metadata === null ||
    typeof metadata !== 'object'
  ) {
    return JSON.stringify(envelope);
  }
  return `{"position":${position},"stream":${streamJson(stream)},"revision":${revision},"type":${typeJson(type)},"version":${version},"data":${dataJson},"metadata":${metadataJson(metadata)}}`;
};
