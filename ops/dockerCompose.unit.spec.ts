import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROLES } from './config.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => readFileSync(join(REPO, file), 'utf8');

/**
 * docker-compose.yml cannot be started here (no Docker engine), so what can drift is checked by
 * reading it: every setting it gives the service is one the configuration table documents and
 * loadConfig reads, and every role it starts is a role.
 */
describe('docker-compose.yml stays in step with the configuration', () => {
  const compose = read('docker-compose.yml');
  const readme = read('README.md');
  const config = read('ops/config.ts');
  /** The service's environment block (the x-service anchor) and the per-role overrides. */
  const serviceSettings = [...new Set([...compose.matchAll(/^ {4,6}([A-Z][A-Z0-9_]+): /gm)].map((match) => match[1]!))].filter(
    (name) => !name.startsWith('KAFKA_') || ['KAFKA_BROKERS', 'KAFKA_SESSION_TIMEOUT_MS'].includes(name),
  ).filter((name) => !name.startsWith('KURRENTDB_'));

  it('given the settings compose gives the roles, then each is in the README configuration table and read by loadConfig', () => {
    expect(serviceSettings).to.include.members(['EVENTSTORE_URL', 'MONGO_URL', 'KAFKA_BROKERS', 'DATA_DIR']);
    for (const name of serviceSettings) {
      expect(readme, `README documents ${name}`).to.include(`| \`${name}\` |`);
      expect(config, `loadConfig reads ${name}`).to.include(`'${name}'`);
    }
  });

  it('given the role containers, then each starts a role the service knows, and every role but all has one', () => {
    const started = [...compose.matchAll(/command: \["--role", "([a-z]+)"\]/g)].map((match) => match[1]!);
    for (const role of started) expect(ROLES as ReadonlyArray<string>, role).to.include(role);
    expect([...new Set(started)].sort()).to.deep.equal(ROLES.filter((role) => role !== 'all').sort());
  });
});
