import { EventEmitter } from 'node:events';
import { expect } from 'chai';
import type { LogEntry, Logger } from '../shared/ports/Logger.ts';
import { installProcessGuard, uncaughtVerdict } from './processGuard.ts';

const coded = (message: string, code: string): Error => Object.assign(new Error(message), { code });

describe('process guard (uncaughtException / unhandledRejection)', () => {
  let emitter: EventEmitter;
  let entries: LogEntry[];
  let exits: number[];
  let flushed: number;
  let uninstall: () => void;

  beforeEach(() => {
    emitter = new EventEmitter();
    entries = [];
    exits = [];
    flushed = 0;
    const logger: Logger = {
      log: (entry) => void entries.push(entry),
      flush: () => {
        flushed += 1;
        return Promise.resolve();
      },
    };
    uninstall = installProcessGuard({ process: emitter, logger, exit: (code) => void exits.push(code) });
  });
  afterEach(() => uninstall());

  /** Lets the guard's flush-then-exit run. */
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('given the errors of one connection\'s stream (cut gzip, bad brotli, reset peer), when uncaught, then they are logged and the process keeps serving', async () => {
    for (const error of [
      coded('unexpected end of file', 'Z_BUF_ERROR'),
      coded('incorrect header check', 'Z_DATA_ERROR'),
      coded('Decompression failed', 'ERR__ERROR_FORMAT_PADDING_1'),
      coded('read ECONNRESET', 'ECONNRESET'),
      coded('write EPIPE', 'EPIPE'),
      coded('Premature close', 'ERR_STREAM_PREMATURE_CLOSE'),
    ]) {
      emitter.emit('uncaughtException', error);
    }
    await settle();
    expect(exits).to.deep.equal([]);
    expect(entries.map((entry) => [entry.level, entry.code])).to.deep.equal([
      ['error', 'Z_BUF_ERROR'],
      ['error', 'Z_DATA_ERROR'],
      ['error', 'ERR__ERROR_FORMAT_PADDING_1'],
      ['error', 'ECONNRESET'],
      ['error', 'EPIPE'],
      ['error', 'ERR_STREAM_PREMATURE_CLOSE'],
    ]);
    expect(entries[0]?.message).to.equal("Uncaught error of one connection's stream, survived: unexpected end of file");
  });

  it('given any other uncaught exception (a bug, a programmer error), when thrown, then it is logged critical, the log flushed and the process exits with 1, once', async () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'laui')");
    const originalError = console.error;
    console.error = () => {};
    try {
      emitter.emit('uncaughtException', bug);
      emitter.emit('uncaughtException', new RangeError('second'));
      await settle();
    } finally {
      console.error = originalError;
    }
    expect(exits).to.deep.equal([1]);
    expect(flushed).to.equal(1);
    expect(entries).to.have.length(1);
    expect(entries[0]).to.deep.include({ level: 'critical', message: "Uncaught exception, the process exits: Cannot read properties of undefined (reading 'laui')" });
    expect(String(entries[0]?.stack)).to.include('TypeError');
  });

  it('given an unhandled promise rejection, when it happens, then it is logged and the process keeps serving', async () => {
    emitter.emit('unhandledRejection', new Error('the projection could not be read'));
    emitter.emit('unhandledRejection', 'a bare string');
    await settle();
    expect(exits).to.deep.equal([]);
    expect(entries.map((entry) => entry.message)).to.deep.equal([
      'Unhandled promise rejection, survived: the projection could not be read',
      'Unhandled promise rejection, survived: a bare string',
    ]);
  });

  it('given the guard taken off, then it listens no more', () => {
    uninstall();
    expect(emitter.listenerCount('uncaughtException')).to.equal(0);
    expect(emitter.listenerCount('unhandledRejection')).to.equal(0);
  });

  it('given errors without a code or with a code of shared state, then the verdict is exit', () => {
    expect(uncaughtVerdict(new Error('x'))).to.equal('exit');
    expect(uncaughtVerdict(coded('x', 'ERR_INVALID_ARG_TYPE'))).to.equal('exit');
    expect(uncaughtVerdict(coded('x', 'SQLITE_CORRUPT'))).to.equal('exit');
    expect(uncaughtVerdict(null)).to.equal('exit');
    expect(uncaughtVerdict(coded('x', 'Z_BUF_ERROR'))).to.equal('keep-serving');
  });
});
