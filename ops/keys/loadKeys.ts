import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey, generateKeyPairSync, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { exportPKCS8, exportSPKI, generateKeyPair, importPKCS8, importSPKI, type CryptoKey } from 'jose';

/**
 * Keys live in DATA_DIR/keys (mode 0600) unless given by the environment, so that a restart keeps
 * issued tokens valid and encrypted secrets readable. Written with `wx` so that two processes
 * starting on one fresh DATA_DIR cannot each write a different key: the loser reads the winner's.
 */
export interface KeyMaterial {
  jwtPrivateKey: CryptoKey;
  jwtPublicKey: CryptoKey;
  /** HS256 key of worker tokens (JoseTokenSigner), derived from the JWT private key: no file or setting of its own. */
  workerTokenSecret: Uint8Array;
  encryptionKey: Buffer;
  /** Ed25519: signs the hash chain's checkpoints (CheckpointSigner); its public half is published with them. */
  eventSigningKey: KeyObject;
  eventSigningPublicKeyPem: string;
}

/**
 * The checkpoint signing key, DATA_DIR/keys/event-signing.pem (PKCS#8). Asymmetric, so that an
 * auditor holding the public key verifies an export offline without any secret of the service.
 */
const loadEventSigningKey = (dir: string): { eventSigningKey: KeyObject; eventSigningPublicKeyPem: string } => {
  const candidate = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const eventSigningKey = createPrivateKey(writeOnce(join(dir, 'event-signing.pem'), candidate));
  if (eventSigningKey.asymmetricKeyType !== 'ed25519') throw new Error('DATA_DIR/keys/event-signing.pem is not an Ed25519 key');
  return { eventSigningKey, eventSigningPublicKeyPem: createPublicKey(eventSigningKey).export({ type: 'spki', format: 'pem' }).toString() };
};

/**
 * HKDF-SHA256 over the JWT private key's PKCS#8 bytes: every process given that key (DATA_DIR or
 * JWT_PRIVATE_KEY) derives the same 32 bytes; the public key and the tokens tell nothing of them.
 */
const workerTokenSecretOf = (privatePem: string): Uint8Array => {
  const der = createPrivateKey(privatePem).export({ type: 'pkcs8', format: 'der' });
  return new Uint8Array(hkdfSync('sha256', der, 'pipeline-orchestrator', 'worker tokens v1', 32));
};

const writeOnce = (path: string, content: string): string => {
  try {
    writeFileSync(path, content, { mode: 0o600, flag: 'wx' });
    return content;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readFileSync(path, 'utf8');
    throw error;
  }
};

const decodeEncryptionKey = (raw: string, source: string): Buffer => {
  const trimmed = raw.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32) throw new Error(`${source} must be 32 bytes as 64 hex characters or base64`);
  return key;
};

export const loadKeys = async (options: {
  dataDir: string;
  jwtPrivateKeyPem: string | null;
  jwtPublicKeyPem: string | null;
  encryptionKey: string | null;
}): Promise<KeyMaterial> => {
  const dir = join(options.dataDir, 'keys');
  mkdirSync(dir, { recursive: true, mode: 0o700 });

  let privatePem = options.jwtPrivateKeyPem;
  let publicPem = options.jwtPublicKeyPem;
  if ((privatePem === null) !== (publicPem === null)) {
    throw new Error('JWT_PRIVATE_KEY and JWT_PUBLIC_KEY must be given together');
  }
  if (privatePem === null || publicPem === null) {
    const privatePath = join(dir, 'jwt-private.pem');
    const publicPath = join(dir, 'jwt-public.pem');
    if (!existsSync(privatePath)) {
      const pair = await generateKeyPair('RS256', { extractable: true, modulusLength: 2048 });
      const candidatePrivate = await exportPKCS8(pair.privateKey);
      privatePem = writeOnce(privatePath, candidatePrivate);
      if (privatePem === candidatePrivate) writeFileSync(publicPath, await exportSPKI(pair.publicKey), { mode: 0o600 });
    }
    privatePem = readFileSync(privatePath, 'utf8');
    publicPem = await waitForFile(publicPath);
  }

  const encryptionKey =
    options.encryptionKey !== null
      ? decodeEncryptionKey(options.encryptionKey, 'ENCRYPTION_KEY')
      : decodeEncryptionKey(writeOnce(join(dir, 'encryption.key'), randomBytes(32).toString('hex')), 'DATA_DIR/keys/encryption.key');

  return {
    jwtPrivateKey: await importPKCS8(privatePem, 'RS256'),
    jwtPublicKey: await importSPKI(publicPem, 'RS256'),
    workerTokenSecret: workerTokenSecretOf(privatePem),
    encryptionKey,
    ...loadEventSigningKey(dir),
  };
};

/** The process that won the private key race writes the public key right after; wait briefly for it. */
const waitForFile = async (path: string): Promise<string> => {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    if (existsSync(path)) {
      const content = readFileSync(path, 'utf8');
      if (content.includes('END PUBLIC KEY')) return content;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${path} is missing: remove DATA_DIR/keys/jwt-private.pem to regenerate the key pair`);
};
