import { hash } from 'node:crypto';
import { canonicalJson } from './canonicalJson.ts';

/**
 * The log's hash chain (docs/events.md "The hash chain", docs/decisions.md). Every event written
 * since schema 2 of the SQLite store carries
 *
 *   hash = SHA-256( JCS({position, stream, revision, type, version, data, metadata, prev_hash}) )
 *
 * as lowercase hex, over the event as the store holds it: the stream id as stored (not the served
 * one), data and metadata as written (before upcasting and redaction), `version` the schema version
 * the event was written with (`metadata.version`, 1 when absent). `prev_hash` is the hash of the
 * event before it in the global order, or, when that event has none (written before the chain), the
 * anchor of its position; the very first event of a log follows the anchor of position 0.
 */

/** The documented constant of the anchors: changing it would break every chain. */
export const CHAIN_ANCHOR_LABEL = 'pipeline-orchestrator/event-log/v1';

// crypto.hash, one call: about half the time of createHash().update().digest() on an event's text.
export const sha256Hex = (text: string): string => hash('sha256', text, 'hex');

/**
 * What the first hashed event after `position` follows when the event at `position` has no hash:
 * SHA-256(JCS({anchor: CHAIN_ANCHOR_LABEL, position})). Position 0 (nothing before) is the genesis.
 * Events written before the chain are not covered by it; the anchor binds only where they end.
 */
export const chainAnchor = (position: bigint | number): string => sha256Hex(canonicalJson({ anchor: CHAIN_ANCHOR_LABEL, position: BigInt(position) }));

export const GENESIS_HASH = chainAnchor(0);

/** The fields a hash covers, as the store holds them. */
export interface ChainedFields {
  position: bigint | number;
  stream: string;
  revision: number;
  type: string;
  version: number;
  data: unknown;
  metadata: unknown;
  prev_hash: string;
}

/** The hash of one event: SHA-256 of the JCS of its chained fields (those eight, whatever else the object holds). */
export const eventHash = ({ position, stream, revision, type, version, data, metadata, prev_hash }: ChainedFields): string =>
  sha256Hex(canonicalJson({ position, stream, revision, type, version, data, metadata, prev_hash }));

/** What the event after `previous` follows: its hash, or its anchor when it has none, or the genesis. */
export const followedHash = (previous: { position: bigint; hash: string | null } | null): string =>
  previous === null ? GENESIS_HASH : (previous.hash ?? chainAnchor(previous.position));

/** The schema version an event was written with, from its stored metadata (upcast.ts's rule). */
export const storedVersion = (metadata: unknown): number => {
  const version = metadata !== null && typeof metadata === 'object' ? (metadata as { version?: unknown }).version : undefined;
  return typeof version === 'number' && Number.isInteger(version) && version >= 1 ? version : 1;
};

/**
 * The writer's hasher: the same text as eventHash over the stored JSON, made without building the
 * object again. JSON.stringify made the stored texts, so parsing them gives the values written;
 * a command's events share one metadata text, canonicalized once.
 */
/**
 * An event row as the hasher reads it. `parsedData`, when given, is `JSON.parse(data)` already made
 * by the caller (the writer packs the same value): the text is then not parsed a second time.
 */
export interface HashedRow {
  position: bigint;
  stream: string;
  revision: number;
  type: string;
  data: string;
  parsedData?: unknown;
  metadata: string;
  prevHash: string;
}

export const storedEventHasher = (): ((row: HashedRow) => string) => {
  let lastMetadata: string | undefined;
  let lastCanonicalMetadata = '';
  let lastVersion = 1;
  return ({ position, stream, revision, type, data, parsedData, metadata, prevHash }) => {
    if (metadata !== lastMetadata) {
      const parsed: unknown = JSON.parse(metadata);
      lastCanonicalMetadata = canonicalJson(parsed);
      lastVersion = storedVersion(parsed);
      lastMetadata = metadata;
    }
    // Members in JCS order (data, metadata, position, prev_hash, revision, stream, type, version):
    // hashChain.unit.spec.ts holds this text to canonicalJson of the same fields.
    const text = `{"data":${canonicalJson(parsedData === undefined ? JSON.parse(data) : parsedData)},"metadata":${lastCanonicalMetadata},"position":${position.toString()},"prev_hash":${JSON.stringify(prevHash)},"revision":${revision},"stream":${JSON.stringify(stream)},"type":${JSON.stringify(type)},"version":${lastVersion}}`;
    return sha256Hex(text);
  };
};
