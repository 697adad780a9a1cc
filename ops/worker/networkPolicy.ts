import { spawnSync } from 'node:child_process';
import { lookup, resolveSrv } from 'node:dns/promises';
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import type { BusConfig, EventStoreConfig, ReadStoreConfig, WorkerNetworkConfig, WorkerNetworkMode } from '../config.ts';
import type { RunAsRange, SandboxDecision } from './sandbox.ts';

/**
 * What run processes (operator and action code, install steps) may connect to: WORKER_NETWORK
 * (README, Security). As root the run identities are a uid/gid range of their own, so one nftables
 * table with an owner match on that range (`meta skuid`, `meta skgid`) enforces it for every
 * process of every run at no cost per run; in bubblewrap (not root) only `none` can be had, as a
 * network namespace of the sandbox's own. See docs/decisions.md ("Network of run processes").
 */

/** Where nft is looked for, in this order: fixed system directories, never a PATH lookup (PATH is the environment's). */
export const NFT_DIRS = ['/usr/sbin', '/usr/bin', '/sbin', '/bin'] as const;

/**
 * Always refused under `restricted`, besides every address of this host (`fib daddr type local`,
 * which covers 127.0.0.0/8, ::1 and every address of every interface, so the service's own port
 * whatever HOST it listens on): the unspecified addresses (a connect to 0.0.0.0 or :: reaches this
 * host), link-local addresses (169.254.0.0/16 with the cloud metadata address 169.254.169.254,
 * fe80::/10), and the metadata addresses outside link-local: AWS's IPv6 one and Alibaba Cloud's.
 */
export const ALWAYS_REFUSED = {
  ipv4: ['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '100.100.100.200/32'],
  ipv6: ['::/128', '::1/128', 'fe80::/10', 'fd00:ec2::254/128'],
} as const;

/** The nftables table of one instance: named after the first uid of its run range (one range per instance). */
export const tableName = (range: Pick<RunAsRange, 'uid'>): string => `coderun_${range.uid}`;

export interface RulesetInput {
  table: string;
  mode: 'restricted' | 'none';
  /** The run identities: `count` uids from `uid`, `count` gids from `gid`. */
  range: RunAsRange;
  /** WORKER_NETWORK_DENY, as address/prefix. */
  deny: ReadonlyArray<string>;
  /** The addresses of the hosts in KAFKA_BROKERS, EVENTSTORE_URL and MONGO_URL. */
  serviceAddresses: ReadonlyArray<string>;
  /** The resolvers of /etc/resolv.conf: DNS (port 53) to them stays allowed under `restricted`. */
  resolvers: ReadonlyArray<string>;
}

/**
 * The ruleset text for `nft -f -`. It declares the table, deletes it and declares it again: one
 * transaction, so a table left by a killed instance (or this one's last start) is replaced
 * atomically, never merged with and never missing in between.
 * - The base chain hooks output at priority -150 (mangle), before NAT (-100): it sees the destination
 *   a process asked for, so a resolver that a NAT rule redirects (Docker's 127.0.0.11:53) is matched
 *   on port 53, and a redirect to this host cannot turn a refused destination into an allowed one.
 * - It jumps on the socket's owner (`meta skuid`, `meta skgid`: the gid catches a setuid program a
 *   run starts, whose sockets keep the run's gid). A packet without a socket (a RST or ICMP error
 *   the kernel sends) has no owner and matches neither: it must not be refused, or a refused
 *   connection would hang instead of failing at once.
 * - Refused TCP gets a reset (connect fails at once with ECONNREFUSED), anything else an ICMP
 *   administratively-prohibited (UDP send fails with EPERM): nothing hangs, nothing leaves.
 */
export function nftRuleset(input: RulesetInput): string {
  const { table, mode, range } = input;
  const span = (first: number) => (range.count > 1 ? `${first}-${first + range.count - 1}` : String(first));
  const family = (cidrs: ReadonlyArray<string>, v: 4 | 6) => cidrs.filter((cidr) => isIP(cidr.split('/')[0] ?? '') === v);
  const hostOnly = (address: string) => address.split('%')[0] ?? address;
  const lines = [
    `# Run processes of this service (uids ${span(range.uid)}, gids ${span(range.gid)}): WORKER_NETWORK=${mode}`,
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
  ];
  const rules: string[] = [];
  if (mode === 'restricted') {
    const refused4 = [...ALWAYS_REFUSED.ipv4, ...family(input.deny, 4), ...input.serviceAddresses.map(hostOnly).filter((a) => isIP(a) === 4)];
    const refused6 = [...ALWAYS_REFUSED.ipv6, ...family(input.deny, 6), ...input.serviceAddresses.map(hostOnly).filter((a) => isIP(a) === 6)];
    // auto-merge: a service address inside an always-refused range (Kafka on 127.0.0.1) is no conflict.
    lines.push(`\tset refused_ipv4 { type ipv4_addr; flags interval; auto-merge; elements = { ${[...new Set(refused4)].join(', ')} }; }`);
    lines.push(`\tset refused_ipv6 { type ipv6_addr; flags interval; auto-merge; elements = { ${[...new Set(refused6)].join(', ')} }; }`);
    const resolvers = [...new Set(input.resolvers.map(hostOnly))];
    for (const v of [4, 6] as const) {
      const these = resolvers.filter((address) => isIP(address) === v);
      if (these.length > 0) rules.push(`${v === 4 ? 'ip' : 'ip6'} daddr { ${these.join(', ')} } meta l4proto { tcp, udp } th dport 53 accept`);
    }
    // Broadcast and multicast are delivered to this host's own listeners too.
    rules.push('fib daddr type { local, broadcast, multicast } jump refuse', 'ip daddr @refused_ipv4 jump refuse', 'ip6 daddr @refused_ipv6 jump refuse');
  } else {
    rules.push('jump refuse');
  }
  lines.push(
    '\tchain output {',
    '\t\ttype filter hook output priority -150; policy accept;',
    `\t\tmeta skuid ${span(range.uid)} jump run`,
    `\t\tmeta skgid ${span(range.gid)} jump run`,
    '\t}',
    '\tchain run {',
    ...rules.map((rule) => `\t\t${rule}`),
    '\t}',
    '\tchain refuse {',
    '\t\tmeta l4proto tcp reject with tcp reset',
    '\t\treject with icmpx type admin-prohibited',
    '\t}',
    '}',
  );
  return `${lines.join('\n')}\n`;
}

/** Deletes the table if it exists (declaring it first makes the delete succeed when it does not). */
export const nftRemoval = (table: string): string => `table inet ${table}\ndelete table inet ${table}\n`;

/** The nameservers of a resolv.conf text, zone suffixes kept off (fe80::1%eth0). */
export function resolvConfNameservers(text: string): string[] {
  const found: string[] = [];
  for (const line of text.split('\n')) {
    const match = /^\s*nameserver\s+(\S+)/.exec(line);
    const address = match?.[1]?.split('%')[0];
    if (address && isIP(address) !== 0) found.push(address);
  }
  return found;
}

/**
 * The hosts named in a connection string (`scheme://[user:password@]host[:port][,host[:port]...][/path][?query]`),
 * IPv6 addresses without their brackets.
 */
export function connectionStringHosts(url: string): string[] {
  let rest = url.slice(url.indexOf('://') + 3);
  const query = rest.indexOf('?');
  if (query >= 0) rest = rest.slice(0, query);
  const at = rest.lastIndexOf('@');
  if (at >= 0) rest = rest.slice(at + 1);
  const slash = rest.indexOf('/');
  if (slash >= 0) rest = rest.slice(0, slash);
  return rest
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => (entry.startsWith('[') ? entry.slice(1, entry.indexOf(']')) : entry.split(':')[0] ?? entry));
}

/** A host the service talks to, by the setting that names it; `srv`: a mongodb+srv name (its SRV record lists the hosts). */
export interface ServiceHost {
  setting: 'KAFKA_BROKERS' | 'EVENTSTORE_URL' | 'MONGO_URL';
  host: string;
  srv?: true;
}

/** The hosts of the service's broker and stores (KAFKA_BROKERS, EVENTSTORE_URL, MONGO_URL), as configured. */
export function serviceHosts(config: { bus: BusConfig; eventStore: EventStoreConfig; readStore: ReadStoreConfig }): ServiceHost[] {
  const hosts: ServiceHost[] = [];
  if (config.bus.kind === 'kafka') {
    for (const broker of config.bus.brokers) {
      const host = broker.startsWith('[') ? broker.slice(1, broker.indexOf(']')) : broker.slice(0, broker.lastIndexOf(':'));
      hosts.push({ setting: 'KAFKA_BROKERS', host });
    }
  }
  if (config.eventStore.kind === 'kurrentdb') {
    for (const host of connectionStringHosts(config.eventStore.connectionString)) hosts.push({ setting: 'EVENTSTORE_URL', host });
  }
  if (config.readStore.kind === 'mongodb') {
    const srv = config.readStore.url.startsWith('mongodb+srv://');
    for (const host of connectionStringHosts(config.readStore.url)) hosts.push({ setting: 'MONGO_URL', host, ...(srv ? { srv: true as const } : {}) });
  }
  return hosts;
}

/** How names are resolved (node:dns: getaddrinfo, so /etc/hosts counts as for the clients; SRV records). */
export interface Resolver {
  addresses(host: string): Promise<string[]>;
  srvTargets(name: string): Promise<string[]>;
}

export const systemResolver: Resolver = {
  addresses: async (host) => (await lookup(host, { all: true })).map((entry) => entry.address),
  srvTargets: async (name) => (await resolveSrv(name)).map((record) => record.name),
};

/**
 * Every address of every service host, resolved now (once, at start: a later change of the names
 * is not followed). A name that does not resolve stops the start: the policy would miss its host.
 */
export async function resolveServiceHosts(hosts: ReadonlyArray<ServiceHost>, resolver: Resolver = systemResolver): Promise<string[]> {
  const found = new Set<string>();
  for (const { setting, host, srv } of hosts) {
    try {
      const names = srv ? await resolver.srvTargets(`_mongodb._tcp.${host}`) : [host];
      for (const name of names) {
        for (const address of isIP(name) !== 0 ? [name] : await resolver.addresses(name)) found.add(address);
      }
    } catch (error) {
      throw new Error(
        `WORKER_NETWORK=restricted: the ${setting} host "${host}" does not resolve (${(error as NodeJS.ErrnoException).code ?? String(error)}), so run processes could not be kept from it; fix the name, or set WORKER_NETWORK=none or host`,
        { cause: error },
      );
    }
  }
  return [...found];
}

/** The first of NFT_DIRS holding an executable `nft`, or null. */
export function findNft(isExecutable: (path: string) => boolean = executableFile): string | null {
  for (const dir of NFT_DIRS) if (isExecutable(`${dir}/nft`)) return `${dir}/nft`;
  return null;
}

function executableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** How the network of run processes is kept (decideNetwork). */
export type NetworkDecision =
  /** Run identities (root): this instance's nftables table, owner match on the range. */
  | { kind: 'nftables'; mode: 'restricted' | 'none'; range: RunAsRange }
  /** bubblewrap and `none`: the sandboxes get a network namespace of their own (nothing but their own loopback). */
  | { kind: 'unshare' }
  /** `host`: no restriction, warned at every start; `range`: the run identities whose stale table is cleared. */
  | { kind: 'host'; warning: string; range: RunAsRange | null }
  /** Cannot be enforced here: every run is refused with this message. */
  | { kind: 'refused'; message: string }
  /** No sandbox (WORKER_SANDBOX=none, or runs refused anyway): code has the service's rights, network included. */
  | { kind: 'unenforced' };

/**
 * - run identities (root, or WORKER_RUN_AS_* with CAP_SETUID): `restricted` and `none` by nftables;
 * - bubblewrap (not root): `none` as a network namespace; `restricted` cannot be had (no firewall
 *   rules without CAP_NET_ADMIN, and a namespace's routed egress would need root to set up), so
 *   code runs are refused, as decideSandbox refuses them, naming the ways out;
 * - no sandbox: nothing to enforce (WORKER_SANDBOX=none is warned about already).
 */
export function decideNetwork(input: { mode: WorkerNetworkMode; sandbox: SandboxDecision }): NetworkDecision {
  const { mode, sandbox } = input;
  if (sandbox.kind === 'none' || sandbox.kind === 'refused') return { kind: 'unenforced' };
  if (mode === 'host') {
    return {
      kind: 'host',
      warning:
        'WORKER_NETWORK=host: operator and action code reaches every address the service reaches, this host\'s own listeners (the service\'s port, databases on loopback) and the cloud metadata address included',
      range: sandbox.kind === 'run-as' ? sandbox.range : null,
    };
  }
  if (sandbox.kind === 'run-as') return { kind: 'nftables', mode, range: sandbox.range };
  if (mode === 'none') return { kind: 'unshare' };
  return {
    kind: 'refused',
    message:
      'code runs are disabled: WORKER_NETWORK=restricted cannot be enforced in the bubblewrap sandbox (the service does not run as root, and the restriction is an nftables rule on the run processes\' uids); set WORKER_NETWORK=none (code gets no network), WORKER_NETWORK=host (code reaches everything the service reaches, this host\'s listeners included), or run the service as root',
  };
}

/** The policy in force, as ops/service.ts wires it. */
export interface NetworkPolicy {
  decision: NetworkDecision;
  /** Every run is refused with this (the policy cannot be enforced here), or null. */
  refused: string | null;
  /** Warned at every start (WORKER_NETWORK=host), or null. */
  warning: string | null;
  /** The bubblewrap sandboxes get a network namespace of their own (WORKER_NETWORK=none). */
  unshareNet: boolean;
  /** What the start did, for the log. */
  summary: string | null;
  /** Removes this instance's table (at stop; nothing when it made none). */
  remove(): void;
}

/** What startNetworkPolicy needs from the host (tests pass their own). */
export interface NetworkPorts {
  findNft(): string | null;
  /** Runs nft with the ruleset on stdin (`nft -f -`). */
  runNft(nft: string, ruleset: string): { ok: boolean; error: string };
  resolver: Resolver;
  resolvConf(): string;
}

export const systemNetworkPorts: NetworkPorts = {
  findNft: () => findNft(),
  runNft: (nft, ruleset) => {
    const result = spawnSync(nft, ['-f', '-'], { input: ruleset, encoding: 'utf8', timeout: 20_000 });
    return { ok: result.status === 0, error: (result.stderr || result.error?.message || `exit ${result.status}`).trim() };
  },
  resolver: systemResolver,
  resolvConf: () => {
    try {
      return readFileSync('/etc/resolv.conf', 'utf8');
    } catch {
      return '';
    }
  },
};

/**
 * Decides the network policy and puts it in force (at start, once): the nftables table of this
 * instance's run range, replaced atomically; for `host`, a table a killed instance left for the
 * range is removed. A service host that does not resolve stops the start (throws); nftables missing
 * or refusing the ruleset (no CAP_NET_ADMIN) refuses every run with a message saying so.
 */
export async function startNetworkPolicy(
  input: { network: WorkerNetworkConfig; sandbox: SandboxDecision; services: ReadonlyArray<ServiceHost> },
  ports: NetworkPorts = systemNetworkPorts,
): Promise<NetworkPolicy> {
  const decision = decideNetwork({ mode: input.network.mode, sandbox: input.sandbox });
  const policy: NetworkPolicy = { decision, refused: null, warning: null, unshareNet: false, summary: null, remove: () => {} };
  if (decision.kind === 'refused') return { ...policy, refused: decision.message };
  if (decision.kind === 'unshare') return { ...policy, unshareNet: true, summary: 'code runs have no network (WORKER_NETWORK=none: a network namespace per bubblewrap sandbox)' };
  if (decision.kind === 'host') {
    const nft = decision.range ? ports.findNft() : null;
    if (nft && decision.range) ports.runNft(nft, nftRemoval(tableName(decision.range)));
    return { ...policy, warning: decision.warning };
  }
  if (decision.kind !== 'nftables') return policy;
  const modeName = `WORKER_NETWORK=${decision.mode}`;
  const nft = ports.findNft();
  if (nft === null) {
    return {
      ...policy,
      refused: `code runs are disabled: ${modeName} needs nftables (\`nft\` in ${NFT_DIRS.join(', ')}; Debian: apt-get install nftables); or set WORKER_NETWORK=host (code reaches everything the service reaches, this host's listeners included)`,
    };
  }
  const table = tableName(decision.range);
  const ruleset = nftRuleset({
    table,
    mode: decision.mode,
    range: decision.range,
    deny: input.network.deny,
    serviceAddresses: decision.mode === 'restricted' ? await resolveServiceHosts(input.services, ports.resolver) : [],
    resolvers: decision.mode === 'restricted' ? resolvConfNameservers(ports.resolvConf()) : [],
  });
  const applied = ports.runNft(nft, ruleset);
  if (!applied.ok) {
    return {
      ...policy,
      refused: `code runs are disabled: ${modeName} could not be put in force (${nft} -f - failed: ${applied.error.slice(0, 500)}); the service needs CAP_NET_ADMIN (a container: cap_add NET_ADMIN), or set WORKER_NETWORK=host`,
    };
  }
  const range = `${decision.range.uid}-${decision.range.uid + decision.range.count - 1}`;
  return {
    ...policy,
    summary:
      decision.mode === 'none'
        ? `code runs have no network (${modeName}: nftables table inet ${table}, uids ${range})`
        : `code runs cannot reach this host, link-local addresses, the service's stores and broker or WORKER_NETWORK_DENY (${modeName}: nftables table inet ${table}, uids ${range})`,
    remove: () => {
      ports.runNft(nft, nftRemoval(table));
    },
  };
}
