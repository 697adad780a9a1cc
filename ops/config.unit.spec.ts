import { expect } from 'chai';
import { loadConfig } from './config.ts';

describe('configuration', () => {
  it('given no variables, when loaded, then the documented defaults apply', () => {
    const config = loadConfig({});
    expect(config).to.include({ port: 8080, host: '127.0.0.1', adminUsername: 'admin', sqliteSynchronous: 'full', workerPoolSize: 2, slaMinuteMs: 60_000 });
    expect(config.workerRunAs).to.equal(null);
    expect(config.adminPassword).to.equal(null);
  });

  it('given a worker identity, when loaded, then both ids are kept; half of one is refused', () => {
    expect(loadConfig({ WORKER_RUN_AS_UID: '65534', WORKER_RUN_AS_GID: '65534' }).workerRunAs).to.deep.equal({ uid: 65534, gid: 65534 });
    expect(() => loadConfig({ WORKER_RUN_AS_UID: '65534' })).to.throw('WORKER_RUN_AS_UID and WORKER_RUN_AS_GID must be given together');
    expect(() => loadConfig({ WORKER_RUN_AS_UID: '0', WORKER_RUN_AS_GID: '0' })).to.throw(/WORKER_RUN_AS_UID must be an integer/);
  });

  it('given malformed values, when loaded, then the error names the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).to.throw(/PORT must be an integer/);
    expect(() => loadConfig({ EMAIL_TOTP: 'maybe' })).to.throw(/EMAIL_TOTP must be true or false/);
    expect(() => loadConfig({ SQLITE_SYNCHRONOUS: 'off' })).to.throw(/SQLITE_SYNCHRONOUS must be full or normal/);
  });
});
