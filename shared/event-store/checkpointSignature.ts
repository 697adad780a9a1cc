import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from './canonicalJson.ts';

/** The chain's hash at a position, signed (GET /api/v1/events/checkpoints, docs/events.md). */
export interface SignedCheckpoint {
  position: number;
  /** The hash of the event at `position` (hex). */
  hash: string;
  signed_at: string;
  /** Ed25519 over signedText(position, hash, signed_at), base64. */
  signature: string;
}

/** What is signed: the JCS of {hash, position, signed_at}, as UTF-8. */
export const signedText = ({ position, hash, signed_at }: Pick<SignedCheckpoint, 'position' | 'hash' | 'signed_at'>): string => canonicalJson({ hash, position, signed_at });

export const signCheckpoint = (claim: Pick<SignedCheckpoint, 'position' | 'hash' | 'signed_at'>, privateKey: KeyObject): SignedCheckpoint => ({
  ...claim,
  signature: sign(null, Buffer.from(signedText(claim), 'utf8'), privateKey).toString('base64'),
});

/** True when the signature is the key's over the checkpoint's claim. A malformed signature is false, never a throw. */
export const checkpointSignedBy = (checkpoint: SignedCheckpoint, publicKey: KeyObject): boolean => {
  try {
    return verify(null, Buffer.from(signedText(checkpoint), 'utf8'), publicKey, Buffer.from(checkpoint.signature, 'base64'));
  } catch {
    return false;
  }
};

/** An Ed25519 public key from its PEM (SPKI); throws a readable error on anything else. */
export const ed25519PublicKey = (pem: string): KeyObject => {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`the public key is ${String(key.asymmetricKeyType)}, not Ed25519`);
  return key;
};

/** SHA-256 of the key's DER (SPKI), hex: what an auditor compares with the published key's. */
export const keyFingerprint = (publicKey: KeyObject): string => createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex');
