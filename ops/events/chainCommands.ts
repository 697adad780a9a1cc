import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KeyObject } from 'node:crypto';
import { InvalidArgumentError, type Command } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import { ed25519PublicKey, keyFingerprint, type SignedCheckpoint } from '../../shared/event-store/checkpointSignature.ts';
import type { EventChain } from '../../shared/event-store/EventChain.ts';
import { loadConfig } from '../config.ts';
import { openDataDirStore } from '../cli/openDataDirStore.ts';
import { chainSource, fileSource, getJson, serviceSource, unsignedCheckpoint, verifyLog, type ChainSource } from './verifyLog.ts';

/** What GET /api/v1/events/checkpoints answers (and `events checkpoints` prints): the key and the checkpoints. */
interface CheckpointsFile {
  public_key?: string;
  checkpoints: SignedCheckpoint[];
}

const readCheckpointsFile = (path: string): CheckpointsFile => {
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  if (Array.isArray(parsed)) return { checkpoints: parsed as SignedCheckpoint[] };
  if (parsed === null || typeof parsed !== 'object' || !Array.isArray((parsed as CheckpointsFile).checkpoints)) {
    throw new InvalidArgumentError(`${path} holds no checkpoints: give the answer of GET /api/v1/events/checkpoints or of events checkpoints`);
  }
  return parsed as CheckpointsFile;
};

/** Every checkpoint of a chain, with the key of DATA_DIR (read, never made). */
const allCheckpoints = async (chain: EventChain): Promise<SignedCheckpoint[]> => {
  const all: SignedCheckpoint[] = [];
  for (let from = 0n; ; ) {
    const page = await chain.readCheckpoints(from, 1000);
    if (page.length === 0) return all;
    all.push(...page);
    from = BigInt(page.at(-1)?.position ?? 0);
  }
};

const dataDirPublicKey = (dataDir: string): string | undefined => {
  const path = join(dataDir, 'keys', 'event-signing.pem');
  if (!existsSync(path)) return undefined;
  return ed25519PublicKeyPemOf(readFileSync(path, 'utf8'));
};

const ed25519PublicKeyPemOf = (privatePem: string): string => ed25519PublicKey(privatePem).export({ type: 'spki', format: 'pem' }).toString();

/** A progress bar on stderr (cli-progress draws only on a terminal): positions, or bytes of a file. */
const verifyBar = (unit: string) => {
  const bar = new SingleBar({ stream: process.stderr, format: `verify {bar} {percentage}% | {value}/{total} ${unit} | ETA {eta}s` }, Presets.shades_classic);
  let started = false;
  return {
    update: (done: number, total: number) => {
      if (!started) bar.start(total, 0);
      started = true;
      bar.setTotal(total);
      bar.update(done);
    },
    stop: () => {
      if (started) bar.stop();
      started = false;
    },
  };
};

/** `events verify` and `events checkpoints` (docs/events.md "The hash chain"). */
export const addChainCommands = (events: Command): void => {
  events
    .command('verify')
    .description("check the log's hash chain and its signed checkpoints: a running service's (--url), an export file (--file, from events export --raw) or DATA_DIR's; exits 1 naming the first position that does not follow")
    .option('--url <url>', "a running service's base URL (needs an administrator's token: --token or ORCHESTRATOR_TOKEN)")
    .option('--token <token>', 'with --url: an access token of an administrator (default: the ORCHESTRATOR_TOKEN environment variable)')
    .option('--file <file>', 'an export written by events export --raw')
    .option('--checkpoints <file>', 'signed checkpoints to hold the log to (the JSON of GET /api/v1/events/checkpoints or of events checkpoints); with --url and DATA_DIR they are read from the log')
    .option('--public-key <file>', "the Ed25519 public key (PEM) the checkpoints must be signed with; without it, the key the checkpoints' source names")
    .action(async (options: { url?: string; token?: string; file?: string; checkpoints?: string; publicKey?: string }) => {
      if (options.url !== undefined && options.file !== undefined) throw new InvalidArgumentError('give --url or --file, not both');
      let source: ChainSource;
      let checkpoints: CheckpointsFile = { checkpoints: [] };
      let close = async (): Promise<void> => {};
      if (options.url !== undefined) {
        const token = options.token ?? process.env.ORCHESTRATOR_TOKEN;
        if (!token) throw new InvalidArgumentError('--url needs an administrator\'s access token: --token or ORCHESTRATOR_TOKEN');
        source = serviceSource(options.url, token);
        checkpoints = options.checkpoints === undefined ? await serviceCheckpoints(options.url, token) : readCheckpointsFile(options.checkpoints);
      } else if (options.file !== undefined) {
        source = fileSource(options.file);
        if (options.checkpoints !== undefined) checkpoints = readCheckpointsFile(options.checkpoints);
      } else {
        const config = loadConfig();
        const store = openDataDirStore(config);
        close = () => store.close();
        source = chainSource(store.chain, await store.headPosition());
        const publicKey = dataDirPublicKey(config.dataDir);
        checkpoints = options.checkpoints === undefined ? { ...(publicKey === undefined ? {} : { public_key: publicKey }), checkpoints: await allCheckpoints(store.chain) } : readCheckpointsFile(options.checkpoints);
      }
      const bar = verifyBar(options.file === undefined ? 'positions' : 'bytes');
      try {
        const key = signingKey(options.publicKey, checkpoints);
        const forged = key === null ? undefined : unsignedCheckpoint(checkpoints.checkpoints, key);
        if (forged !== undefined) fail({ position: forged.position, reason: 'the checkpoint\'s signature is not the public key\'s' });
        if (key === null && checkpoints.checkpoints.length > 0) throw new InvalidArgumentError('the checkpoints name no public key: give --public-key');
        const state = await verifyLog(source, checkpoints.checkpoints, bar.update);
        bar.stop();
        if (state.failure) fail(state.failure);
        console.log(
          JSON.stringify({
            ok: true,
            events: state.legacy + state.hashed,
            before_chain: state.legacy,
            hashed: state.hashed,
            checkpoints: state.checkpointsMatched,
            last_position: state.last === null ? 0 : Number(state.last.position),
            public_key_sha256: key === null ? null : keyFingerprint(key),
          }),
        );
      } finally {
        bar.stop();
        await close();
      }
    });

  events
    .command('checkpoints')
    .description('print the signed checkpoints of DATA_DIR\'s log and its public key, as GET /api/v1/events/checkpoints answers them (for events verify --checkpoints)')
    .option('--out <file>', 'write them to this file instead of stdout')
    .action(async (options: { out?: string }) => {
      const config = loadConfig();
      const store = openDataDirStore(config);
      try {
        const publicKey = dataDirPublicKey(config.dataDir);
        const answer = {
          algorithm: 'Ed25519',
          public_key: publicKey ?? null,
          public_key_sha256: publicKey === undefined ? null : keyFingerprint(ed25519PublicKey(publicKey)),
          checkpoints: await allCheckpoints(store.chain),
        };
        const text = `${JSON.stringify(answer, null, 2)}\n`;
        if (options.out === undefined) process.stdout.write(text);
        else writeFileSync(options.out, text);
      } finally {
        await store.close();
      }
    });
};

/** Every checkpoint a service serves, pages put together. */
const serviceCheckpoints = async (url: string, token: string): Promise<CheckpointsFile> => {
  const all: SignedCheckpoint[] = [];
  let publicKey: string | undefined;
  for (let from = 0; ; ) {
    const page = (await getJson(url, `/api/v1/events/checkpoints?from=${from}&limit=1000`, token)) as CheckpointsFile & { next_from: number };
    publicKey = page.public_key;
    if (page.checkpoints.length === 0) return { ...(publicKey === undefined ? {} : { public_key: publicKey }), checkpoints: all };
    all.push(...page.checkpoints);
    from = page.next_from;
  }
};

/**
 * The key the checkpoints are held to: --public-key, else the one their source names (then they
 * prove the log consistent with that key only: compare its SHA-256, printed, with the published one).
 */
const signingKey = (publicKeyFile: string | undefined, checkpoints: CheckpointsFile): KeyObject | null => {
  if (publicKeyFile !== undefined) return ed25519PublicKey(readFileSync(publicKeyFile, 'utf8'));
  if (checkpoints.public_key === undefined || checkpoints.public_key === null) return null;
  if (checkpoints.checkpoints.length > 0) console.error('note: the checkpoints are checked against the key their source names; give --public-key to hold them to a key obtained otherwise');
  return ed25519PublicKey(checkpoints.public_key);
};

/** Prints the verdict for scripts and ends with exit code 1, naming the position. */
const fail = (failure: { position: number; reason: string }): never => {
  console.log(JSON.stringify({ ok: false, position: failure.position, reason: failure.reason }));
  throw new Error(`the log's hash chain breaks at position ${failure.position}: ${failure.reason}`);
};
