import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/testService.ts';

/**
 * Two service instances on one host must not hand out the same run uids: as root, each claims its
 * range in the host's registry (here a temp one both share), and a start whose range overlaps a
 * live instance's is refused (README, Security).
 */
describe('Run identities across service instances on one host', function () {
  this.timeout(120_000);
  let registry = '';
  const services: TestService[] = [];

  before(function () {
    if (process.getuid?.() !== 0) {
      console.log('    (skipped: run identities are claimed host-wide only by a service running as root)');
      this.skip();
    }
    registry = mkdtempSync(join(tmpdir(), 'run-uids-'));
  });

  after(async () => {
    for (const service of services.splice(0)) await service.stop().catch(() => undefined);
    if (registry) rmSync(registry, { recursive: true, force: true });
  });

  const env = (extra: Record<string, string> = {}) => ({ WORKER_POOL_SIZE: '0', WORKER_RUN_AS_REGISTRY: registry, ...extra });

  it('given a live instance with the default range, when a second starts with the same range, then it refuses to start naming the settings; one with its own range starts; once the first stopped, the same range starts', async () => {
    const first = await startTestService(env());
    services.push(first);
    expect(readdirSync(registry)).to.have.length(1);

    const refused = await startTestService(env()).then(
      (service) => {
        services.push(service);
        return null;
      },
      (error: unknown) => (error as Error).message,
    );
    expect(refused, 'the second instance started').to.be.a('string');
    expect(refused).to.include('overlap').and.include('WORKER_RUN_AS_UID').and.include('WORKER_RUN_AS_COUNT').and.include(`pid ${process.pid}`);
    expect(readdirSync(registry), 'the refused start left no claim').to.have.length(1);

    const beside = await startTestService(env({ WORKER_RUN_AS_UID: '65000', WORKER_RUN_AS_GID: '65000', WORKER_RUN_AS_COUNT: '100' }));
    services.push(beside);
    expect(readdirSync(registry)).to.have.length(2);

    await first.stop();
    services.splice(services.indexOf(first), 1);
    const second = await startTestService(env());
    services.push(second);
    expect((await second.client().get('/healthz')).status).to.equal(200);
    expect(readdirSync(registry)).to.have.length(2);
  });
});
