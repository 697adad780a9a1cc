import { expect } from 'chai';
import { cloudQuerySettingsFromEnv, DEFAULT_CLOUD_QUERY_SETTINGS } from './cloudQuerySettings.ts';

describe('Cloud query settings from the environment', () => {
  it('given nothing set, when read, then the spec\'s limits (512 MB, 2 threads) and a 1 GiB fetch cap', () => {
    expect(cloudQuerySettingsFromEnv({})).to.deep.equal(DEFAULT_CLOUD_QUERY_SETTINGS);
    expect(DEFAULT_CLOUD_QUERY_SETTINGS).to.include({ memoryLimitMb: 512, threads: 2, fetchMaxBytes: 1024 ** 3, ambientCredentials: true, extensionDirectory: null });
  });

  it('given values, when read, then taken; given a malformed one, then the start fails naming the variable', () => {
    const settings = cloudQuerySettingsFromEnv({ DUCKDB_EXTENSION_DIRECTORY: '/opt/duckdb-ext', QUERY_OBJECTS_MAX_MB: '64', QUERY_CLOUD_AMBIENT_CREDENTIALS: 'false', QUERY_ENGINE_CONCURRENCY: '4' });
    expect(settings).to.include({ extensionDirectory: '/opt/duckdb-ext', fetchMaxBytes: 64 * 1024 * 1024, ambientCredentials: false, maxConcurrent: 4 });
    expect(() => cloudQuerySettingsFromEnv({ QUERY_OBJECTS_MAX_MB: 'lots' })).to.throw('QUERY_OBJECTS_MAX_MB');
    expect(() => cloudQuerySettingsFromEnv({ QUERY_CLOUD_AMBIENT_CREDENTIALS: 'maybe' })).to.throw('QUERY_CLOUD_AMBIENT_CREDENTIALS');
  });
});
