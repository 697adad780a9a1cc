import { expect } from 'chai';
import { loadConfig } from '../config.ts';
import {
  connectionStringHosts,
  decideNetwork,
  findNft,
  nftRemoval,
  nftRuleset,
  resolvConfNameservers,
  resolveServiceHosts,
  serviceHosts,
  startNetworkPolicy,
  type NetworkPorts,
  type Resolver,
  type RulesetInput,
} from './networkPolicy.ts';
import type { SandboxDecision } from './sandbox.ts';

const RANGE = { uid: 64_000, gid: 65_000, count: 1000 };
const RESTRICTED: RulesetInput = {
  table: 'coderun_64000',
  mode: 'restricted',
  range: RANGE,
  deny: ['10.0.0.0/8', 'fd12::/16'],
  serviceAddresses: ['192.0.2.9', '2001:db8::5', '127.0.0.1'],
  resolvers: ['127.0.0.53', 'fe80::1'],
};

/** The rules of one chain of a ruleset, trimmed, in order. */
function chain(ruleset: string, name: string): string[] {
  const body = ruleset.split(`\tchain ${name} {\n`)[1]?.split('\n\t}')[0] ?? '';
  return body.split('\n').map((line) => line.trim()).filter((line) => line !== '');
}

/** The elements of a set of a ruleset. */
function elements(ruleset: string, set: string): string[] {
  const match = new RegExp(`set ${set} \\{[^}]*elements = \\{ ([^}]*) \\}`).exec(ruleset);
  return (match?.[1] ?? '').split(', ');
}

describe('nftRuleset: the nftables table of one instance\'s run identities', () => {
  it('given restricted, when built, then the table is replaced in one transaction and the output hook jumps on the run uids and gids, before NAT', () => {
    const ruleset = nftRuleset(RESTRICTED);
    const lines = ruleset.split('\n').filter((line) => !line.startsWith('#'));
    // Declared, deleted, declared again: a stale table of a killed instance is replaced, one `nft -f` transaction.
    expect(lines.slice(0, 3)).to.deep.equal(['table inet coderun_64000', 'delete table inet coderun_64000', 'table inet coderun_64000 {']);
    expect(chain(ruleset, 'output')).to.deep.equal([
      'type filter hook output priority -150; policy accept;',
      'meta skuid 64000-64999 jump run',
      'meta skgid 65000-65999 jump run',
    ]);
    // Refused TCP is reset (connect fails at once); anything else gets an ICMP error, never silence.
    expect(chain(ruleset, 'refuse')).to.deep.equal(['meta l4proto tcp reject with tcp reset', 'reject with icmpx type admin-prohibited']);
  });

  it('given restricted, when built, then DNS to the resolvers is allowed first, then every local, broadcast and multicast destination, loopback, link-local, metadata, service and denied address is refused', () => {
    const ruleset = nftRuleset(RESTRICTED);
    expect(chain(ruleset, 'run')).to.deep.equal([
      'ip daddr { 127.0.0.53 } meta l4proto { tcp, udp } th dport 53 accept',
      'ip6 daddr { fe80::1 } meta l4proto { tcp, udp } th dport 53 accept',
      'fib daddr type { local, broadcast, multicast } jump refuse',
      'ip daddr @refused_ipv4 jump refuse',
      'ip6 daddr @refused_ipv6 jump refuse',
    ]);
    expect(elements(ruleset, 'refused_ipv4')).to.deep.equal(['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '100.100.100.200/32', '10.0.0.0/8', '192.0.2.9', '127.0.0.1']);
    expect(elements(ruleset, 'refused_ipv6')).to.deep.equal(['::/128', '::1/128', 'fe80::/10', 'fd00:ec2::254/128', 'fd12::/16', '2001:db8::5']);
    // Overlapping elements (127.0.0.1 in 127.0.0.0/8) are merged by nft, not refused.
    expect(ruleset).to.include('flags interval; auto-merge;');
  });

  it('given restricted and no resolver, when built, then no DNS exception is made', () => {
    expect(chain(nftRuleset({ ...RESTRICTED, resolvers: [] }), 'run')[0]).to.equal('fib daddr type { local, broadcast, multicast } jump refuse');
  });

  it('given none and a range of one, when built, then everything of that one uid and gid is refused, no set and no DNS exception', () => {
    const ruleset = nftRuleset({ ...RESTRICTED, mode: 'none', range: { uid: 1500, gid: 1600, count: 1 } });
    expect(chain(ruleset, 'output')).to.include.members(['meta skuid 1500 jump run', 'meta skgid 1600 jump run']);
    expect(chain(ruleset, 'run')).to.deep.equal(['jump refuse']);
    expect(ruleset).not.to.include('set ');
    expect(ruleset).not.to.include('dport 53');
  });

  it('given a table, when it is removed, then the removal succeeds whether or not it exists (declared, then deleted)', () => {
    expect(nftRemoval('coderun_64000')).to.equal('table inet coderun_64000\ndelete table inet coderun_64000\n');
  });
});

describe('the service hosts and resolvers a restricted run may not reach (or may, for DNS)', () => {
  it('given connection strings with credentials, several hosts, IPv6, a path and a query, when read, then the host names are listed', () => {
    expect(connectionStringHosts('kurrentdb://admin:p@ss@node1:2113,node2:2113,[fd00::7]:2113?tls=false&nodePreference=leader')).to.deep.equal(['node1', 'node2', 'fd00::7']);
    expect(connectionStringHosts('mongodb://user:pw@[::1]:27017,mongo2/orchestrator?replicaSet=rs0')).to.deep.equal(['::1', 'mongo2']);
    expect(connectionStringHosts('esdb+discover://cluster.example.net:2113')).to.deep.equal(['cluster.example.net']);
  });

  it('given the distributed settings, when listed, then each host is named with its setting; a mongodb+srv name is looked up as SRV', () => {
    const config = loadConfig({
      KAFKA_BROKERS: 'kafka1:9092,[fd00::9]:9092,192.0.2.3:9092',
      EVENTSTORE_URL: 'kurrentdb://kurrentdb:2113?tls=false',
      MONGO_URL: 'mongodb+srv://user:pw@cluster0.example.net/?retryWrites=true',
    });
    expect(serviceHosts(config)).to.deep.equal([
      { setting: 'KAFKA_BROKERS', host: 'kafka1' },
      { setting: 'KAFKA_BROKERS', host: 'fd00::9' },
      { setting: 'KAFKA_BROKERS', host: '192.0.2.3' },
      { setting: 'EVENTSTORE_URL', host: 'kurrentdb' },
      { setting: 'MONGO_URL', host: 'cluster0.example.net', srv: true },
    ]);
    expect(serviceHosts(loadConfig({}))).to.deep.equal([]);
  });

  it('given names, SRV records and literal addresses, when resolved, then every address of every host is listed once; a name that does not resolve names its setting', async () => {
    const asked: string[] = [];
    const resolver: Resolver = {
      addresses: async (host) => {
        asked.push(host);
        if (host === 'missing') throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
        return host === 'kafka1' ? ['192.0.2.10', '2001:db8::10'] : ['192.0.2.20'];
      },
      srvTargets: async (name) => (name === '_mongodb._tcp.cluster0.example.net' ? ['shard-a.example.net', 'shard-b.example.net'] : []),
    };
    const addresses = await resolveServiceHosts(
      [
        { setting: 'KAFKA_BROKERS', host: 'kafka1' },
        { setting: 'KAFKA_BROKERS', host: '192.0.2.3' },
        { setting: 'MONGO_URL', host: 'cluster0.example.net', srv: true },
      ],
      resolver,
    );
    expect(addresses).to.deep.equal(['192.0.2.10', '2001:db8::10', '192.0.2.3', '192.0.2.20']);
    expect(asked).to.deep.equal(['kafka1', 'shard-a.example.net', 'shard-b.example.net']);
    const failure = await resolveServiceHosts([{ setting: 'EVENTSTORE_URL', host: 'missing' }], resolver).catch((error: unknown) => error);
    expect((failure as Error).message).to.equal(
      'WORKER_NETWORK=restricted: the EVENTSTORE_URL host "missing" does not resolve (ENOTFOUND), so run processes could not be kept from it; fix the name, or set WORKER_NETWORK=none or host',
    );
  });

  it('given a resolv.conf, when read, then its nameservers are listed without zone suffixes, other lines and non-addresses ignored', () => {
    const text = '# systemd-resolved\nnameserver 127.0.0.53\nsearch example.net\n  nameserver   fe80::1%eth0\nnameserver resolver.example\noptions edns0 trust-ad\n';
    expect(resolvConfNameservers(text)).to.deep.equal(['127.0.0.53', 'fe80::1']);
  });

  it('given nft in several system directories, when found, then the first of /usr/sbin, /usr/bin, /sbin, /bin is taken, and nothing else is looked at', () => {
    const looked: string[] = [];
    expect(findNft((path) => (looked.push(path), path === '/sbin/nft' || path === '/bin/nft'))).to.equal('/sbin/nft');
    expect(looked).to.deep.equal(['/usr/sbin/nft', '/usr/bin/nft', '/sbin/nft']);
    expect(findNft(() => false)).to.equal(null);
  });
});

const RUN_AS: SandboxDecision = { kind: 'run-as', range: RANGE };
const BWRAP: SandboxDecision = { kind: 'bwrap' };

describe('decideNetwork: how the network of run processes is kept', () => {
  it('given run identities (root), when decided, then restricted and none are nftables rules on the range; host is warned about and clears the range\'s table', () => {
    expect(decideNetwork({ mode: 'restricted', sandbox: RUN_AS })).to.deep.equal({ kind: 'nftables', mode: 'restricted', range: RANGE });
    expect(decideNetwork({ mode: 'none', sandbox: RUN_AS })).to.deep.equal({ kind: 'nftables', mode: 'none', range: RANGE });
    const host = decideNetwork({ mode: 'host', sandbox: RUN_AS });
    expect(host).to.deep.include({ kind: 'host', range: RANGE });
    expect(host.kind === 'host' ? host.warning : '').to.include('WORKER_NETWORK=host').and.include('metadata');
  });

  it('given bubblewrap (not root), when decided, then none is a network namespace, host is warned about, and restricted refuses code runs naming the ways out', () => {
    expect(decideNetwork({ mode: 'none', sandbox: BWRAP })).to.deep.equal({ kind: 'unshare' });
    expect(decideNetwork({ mode: 'host', sandbox: BWRAP })).to.include({ kind: 'host', range: null });
    const restricted = decideNetwork({ mode: 'restricted', sandbox: BWRAP });
    expect(restricted.kind).to.equal('refused');
    expect(restricted.kind === 'refused' ? restricted.message : '').to.include('WORKER_NETWORK=none').and.include('WORKER_NETWORK=host').and.include('as root');
  });

  it('given no sandbox (WORKER_SANDBOX=none) or runs refused anyway, when decided, then nothing is enforced nor warned about beyond the sandbox\'s own message', () => {
    for (const mode of ['restricted', 'none', 'host'] as const) {
      expect(decideNetwork({ mode, sandbox: { kind: 'none', warning: 'w' } })).to.deep.equal({ kind: 'unenforced' });
      expect(decideNetwork({ mode, sandbox: { kind: 'refused', message: 'm' } })).to.deep.equal({ kind: 'unenforced' });
    }
  });
});

/** Ports that record what nft was given; `nft` null: not installed; `fails`: nft refuses. */
function fakePorts(options: { nft?: string | null; fails?: string } = {}): NetworkPorts & { given: string[] } {
  const given: string[] = [];
  return {
    given,
    findNft: () => (options.nft === undefined ? '/usr/sbin/nft' : options.nft),
    runNft: (nft, ruleset) => {
      given.push(`${nft}\n${ruleset}`);
      return options.fails ? { ok: false, error: options.fails } : { ok: true, error: '' };
    },
    resolver: { addresses: async () => ['192.0.2.44'], srvTargets: async () => [] },
    resolvConf: () => 'nameserver 127.0.0.53\n',
  };
}

describe('startNetworkPolicy: the policy put in force at start', () => {
  const network = { mode: 'restricted' as const, deny: ['203.0.113.0/24'] };

  it('given root and restricted, when started, then the ruleset with the service hosts and the resolver goes to nft once, and remove() deletes the table', async () => {
    const ports = fakePorts();
    const policy = await startNetworkPolicy({ network, sandbox: RUN_AS, services: [{ setting: 'KAFKA_BROKERS', host: 'kafka1' }] }, ports);
    expect(policy).to.include({ refused: null, warning: null, unshareNet: false });
    expect(policy.summary).to.include('table inet coderun_64000');
    expect(ports.given).to.have.length(1);
    const [nft, ...ruleset] = (ports.given[0] ?? '').split('\n');
    expect(nft).to.equal('/usr/sbin/nft');
    expect(elements(ruleset.join('\n'), 'refused_ipv4')).to.include.members(['203.0.113.0/24', '192.0.2.44']);
    expect(ruleset.join('\n')).to.include('ip daddr { 127.0.0.53 } meta l4proto { tcp, udp } th dport 53 accept');
    policy.remove();
    expect(ports.given[1]).to.equal(`/usr/sbin/nft\n${nftRemoval('coderun_64000')}`);
  });

  it('given root and no nft in the system directories, when started, then every run is refused naming nftables and the way out', async () => {
    const ports = fakePorts({ nft: null });
    const policy = await startNetworkPolicy({ network, sandbox: RUN_AS, services: [] }, ports);
    expect(policy.refused).to.include('WORKER_NETWORK=restricted needs nftables').and.include('apt-get install nftables').and.include('WORKER_NETWORK=host');
    expect(ports.given).to.deep.equal([]);
  });

  it('given nft refusing the ruleset (no CAP_NET_ADMIN), when started, then every run is refused with nft\'s error and the capability named', async () => {
    const policy = await startNetworkPolicy({ network: { mode: 'none', deny: [] }, sandbox: RUN_AS, services: [] }, fakePorts({ fails: 'Error: Could not process rule: Operation not permitted' }));
    expect(policy.refused).to.include('WORKER_NETWORK=none could not be put in force').and.include('Operation not permitted').and.include('CAP_NET_ADMIN');
  });

  it('given a service host that does not resolve, when started restricted, then the start fails naming it', async () => {
    const ports = fakePorts();
    ports.resolver = { addresses: async () => Promise.reject(Object.assign(new Error('x'), { code: 'EAI_AGAIN' })), srvTargets: async () => [] };
    const failure = await startNetworkPolicy({ network, sandbox: RUN_AS, services: [{ setting: 'MONGO_URL', host: 'mongo' }] }, ports).catch((error: unknown) => error);
    expect((failure as Error).message).to.include('the MONGO_URL host "mongo" does not resolve (EAI_AGAIN)');
    expect(ports.given).to.deep.equal([]);
  });

  it('given host as root, when started, then a table left for the range is removed and the warning given; bubblewrap with none unshares the network', async () => {
    const ports = fakePorts();
    const host = await startNetworkPolicy({ network: { mode: 'host', deny: [] }, sandbox: RUN_AS, services: [] }, ports);
    expect(host.warning).to.include('WORKER_NETWORK=host');
    expect(ports.given).to.deep.equal([`/usr/sbin/nft\n${nftRemoval('coderun_64000')}`]);
    const none = await startNetworkPolicy({ network: { mode: 'none', deny: [] }, sandbox: BWRAP, services: [] }, ports);
    expect(none).to.include({ unshareNet: true, refused: null, warning: null });
    expect(ports.given).to.have.length(1);
  });
});
