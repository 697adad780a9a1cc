import { START, type Position } from '../../shared/event-store/EventStore.ts';
import type { Doc } from '../../shared/read-store/ReadStore.ts';

/** The collection of projection runners' checkpoints, one document per runner name. */
export const CHECKPOINTS = '_checkpoints';

/** The position a checkpoint document holds (a decimal string: positions are bigints); START without one. */
export const checkpointPosition = (doc: Doc | null): Position => (typeof doc?.position === 'string' ? BigInt(doc.position) : START);
