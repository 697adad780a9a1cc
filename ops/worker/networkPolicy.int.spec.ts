import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { catalogClient } from '../../test/support/catalogFixture.ts';
import type { Reply } from '../../test/support/HttpClient.ts';
import { findNft, nftRemoval, nftRuleset, tableName } from './networkPolicy.ts';

/**
 * WORKER_NETWORK as root, end to end: the service (as tests start it) applies its nftables table,
 * and real action code, run as a uid of its run range, tries to connect. A second host is made for
 * it: a network namespace joined by a veth pair, with a TCP listener inside (addresses 10.213.<n>.2
 * and .3, fdcd:213:<n>::2 and ::3; the host side .1 and ::1). Traffic goes only to this machine and
 * that namespace: the cloud metadata address is refused by the policy, and a guard table drops it
 * (a broken policy makes that connect time out instead of reaching anything).
 * The run range is this spec's own (63000 + 16n, never the default 64000-64999 of a service that
 * may be running here), as are the namespace, the veth and the addresses, so two runs do not meet.
 */
const SLOT = process.pid % 50;
const RANGE = { uid: 63_000 + SLOT * 16, gid: 63_000 + SLOT * 16, count: 16 };
const TABLE = tableName(RANGE);
const GUARD = `coderun_guard_${process.pid}`;
const NS = `crnet${process.pid}`;
const VETH = `crh${process.pid}`;
const PEER = `crn${process.pid}`;
const HOST4 = `10.213.${SLOT}.1`;
const NS4 = `10.213.${SLOT}.2`;
const DENIED4 = `10.213.${SLOT}.3`;
const HOST6 = `fdcd:213:${SLOT}::1`;
const NS6 = `fdcd:213:${SLOT}::2`;
const DENIED6 = `fdcd:213:${SLOT}::3`;
const NS_PORT = 8213;
const METADATA = '169.254.169.254';

/**
 * The action: connects to each target (TCP, 5 s at most), sends an HTTP request and reads what the listener says, sends
 * one UDP datagram to this host's loopback; per target the bytes read or the exception's name
 * (ConnectionRefusedError: refused at once; TimeoutError: it hung).
 */
const PROBE = `
import socket

def run(connection, action_variables, context):
    seen = {}
    for name, host, port in action_variables["targets"]:
        try:
            with socket.create_connection((host, port), timeout=5) as s:
                s.sendall(b"GET /healthz HTTP/1.0\\r\\n\\r\\n")
                seen[name] = s.recv(64).decode(errors="replace")
        except OSError as error:
            seen[name] = type(error).__name__
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.sendto(b"x", ("127.0.0.1", action_variables["udpPort"]))
        seen["udp-loopback"] = "sent"
    except OSError as error:
        seen["udp-loopback"] = type(error).__name__
    return seen
`;

/** The first of the system directories holding `name`, or null (never a PATH lookup). */
function systemTool(name: string): string | null {
  return ['/usr/sbin', '/usr/bin', '/sbin', '/bin'].map((dir) => `${dir}/${name}`).find((path) => existsSync(path)) ?? null;
}

function must(tool: string | null, args: string[], input?: string): void {
  const result = spawnSync(tool ?? 'false', args, { encoding: 'utf8', ...(input === undefined ? {} : { input }) });
  if (result.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed: ${result.stderr}`);
}

/** Whether the table exists now. */
function tableExists(nft: string, table: string): boolean {
  return spawnSync(nft, ['list', 'table', 'inet', table], { stdio: 'ignore' }).status === 0;
}

async function listen(host: string, greeting: string): Promise<Server> {
  // Answers once the request is read: closing with unread data would reset the connection.
  const server = createServer((socket) => socket.once('data', () => socket.end(greeting)).on('error', () => {}));
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return server;
}

/** Connects as this (unrestricted) process until the listener answers: the namespace's is up. */
async function waitForListener(host: string, port: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, host, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`the namespace's listener on ${host}:${port} did not come up`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('WORKER_NETWORK as root: what run processes can connect to (nftables owner match)', function () {
  this.timeout(240_000);
  let nft: string;
  let ip: string;
  let nsListener: ChildProcess | null = null;
  let loopback4: Server;
  let loopback6: Server;
  let made = false;

  before(async function () {
    const ci = process.env.CI === 'true' || process.env.CI === '1';
    if (process.getuid?.() !== 0) {
      console.log('    (skipped: nftables rules and network namespaces need root; not root here)');
      this.skip();
    }
    const foundNft = findNft();
    const foundIp = systemTool('ip');
    if (foundNft === null || foundIp === null) {
      const missing = `${foundNft === null ? 'nft (Debian: nftables)' : ''}${foundNft === null && foundIp === null ? ' and ' : ''}${foundIp === null ? 'ip (Debian: iproute2)' : ''}`;
      if (ci) throw new Error(`CI: ${missing} missing, so the network policy cannot be tested`);
      console.log(`    (skipped: ${missing} is not installed)`);
      this.skip();
    }
    nft = foundNft;
    ip = foundIp;
    // Given: the test namespace and its listener, this host's loopback listeners, the guard
    made = true;
    must(ip, ['netns', 'add', NS]);
    must(ip, ['link', 'add', VETH, 'type', 'veth', 'peer', 'name', PEER, 'netns', NS]);
    must(ip, ['addr', 'add', `${HOST4}/29`, 'dev', VETH]);
    must(ip, ['addr', 'add', `${HOST6}/64`, 'dev', VETH, 'nodad']);
    must(ip, ['link', 'set', VETH, 'up']);
    for (const address of [`${NS4}/29`, `${DENIED4}/29`]) must(ip, ['-n', NS, 'addr', 'add', address, 'dev', PEER]);
    for (const address of [`${NS6}/64`, `${DENIED6}/64`]) must(ip, ['-n', NS, 'addr', 'add', address, 'dev', PEER, 'nodad']);
    must(ip, ['-n', NS, 'link', 'set', PEER, 'up']);
    must(ip, ['-n', NS, 'link', 'set', 'lo', 'up']);
    nsListener = spawn(
      ip,
      [
        'netns', 'exec', NS, '/usr/bin/python3', '-c',
        `import socket\ns = socket.create_server(("::", ${NS_PORT}), family=socket.AF_INET6, dualstack_ipv6=True)\nwhile True:\n    c, _ = s.accept()\n    c.settimeout(5)\n    try:\n        c.recv(64)\n        c.sendall(b"ns\\n")\n    except OSError:\n        pass\n    c.close()\n`,
      ],
      { stdio: 'ignore' },
    );
    await waitForListener(NS4, NS_PORT);
    loopback4 = await listen('127.0.0.1', 'lo4\n');
    loopback6 = await listen('::1', 'lo6\n');
    must(nft, ['-f', '-'], `table inet ${GUARD} {\n\tchain output {\n\t\ttype filter hook output priority 100; policy accept;\n\t\tip daddr ${METADATA} meta skuid ${RANGE.uid}-${RANGE.uid + RANGE.count - 1} drop\n\t}\n}\n`);
  });

  after(async () => {
    nsListener?.kill('SIGKILL');
    await new Promise<void>((resolve) => (loopback4 ? loopback4.close(() => resolve()) : resolve()));
    await new Promise<void>((resolve) => (loopback6 ? loopback6.close(() => resolve()) : resolve()));
    if (!made) return;
    // Also when a test failed half-way: nothing of this spec stays on the host.
    spawnSync(nft, ['-f', '-'], { input: nftRemoval(TABLE) + nftRemoval(GUARD) });
    spawnSync(ip, ['link', 'del', VETH], { stdio: 'ignore' });
    spawnSync(ip, ['netns', 'del', NS], { stdio: 'ignore' });
  });

  /** A service on the veth's host address with the spec's run range and `env`; its probe's findings. */
  async function probe(env: Record<string, string>): Promise<{ seen: Record<string, string>; svc: TestService; install: Reply; stopped: () => Promise<void> }> {
    const svc = await startTestService({
      HOST: HOST4,
      WORKER_RUN_AS_UID: String(RANGE.uid),
      WORKER_RUN_AS_GID: String(RANGE.gid),
      WORKER_RUN_AS_COUNT: String(RANGE.count),
      WORKER_POOL_SIZE: '0',
      ...env,
    });
    try {
      const admin = catalogClient(svc, (await svc.login()).token);
      const tree = await admin.bootstrap('net-co');
      const folder = await admin.createOk({ item_type: 'folder.workflow', name: 'probes', parent_laui: tree.folders.workflow });
      const servicePort = Number(new URL(svc.service.url).port);
      const targets = [
        ['ns4', NS4, NS_PORT],
        ['ns6', NS6, NS_PORT],
        ['denied4', DENIED4, NS_PORT],
        ['denied6', DENIED6, NS_PORT],
        ['loopback4', '127.0.0.1', (loopback4.address() as AddressInfo).port],
        ['loopback6', '::1', (loopback6.address() as AddressInfo).port],
        ['service', HOST4, servicePort],
        ['metadata', METADATA, 80],
      ];
      const run = (name: string, code: string, bash: string, variables: Record<string, unknown>) =>
        svc.client().post('/api/v1/action/run', {
          token: admin.token,
          json: {
            item_type: 'action',
            name,
            parent_laui: folder,
            project_laui: tree.project_laui,
            account_laui: tree.account_laui,
            codeblock: { language: 'python', content: code },
            bashblock: { content: bash },
            action_variables: variables,
          },
        });
      const reply = await run('probe.action', PROBE, '', { targets, udpPort: (loopback4.address() as AddressInfo).port });
      expect(reply.status, reply.text).to.equal(200);
      // The install step (bash, dropped to a run identity by setpriv): bash's /dev/tcp to the loopback listener.
      const install = await run('install.action', 'def run(connection, action_variables, context):\n    return {}\n', `exec 3<>/dev/tcp/127.0.0.1/${(loopback4.address() as AddressInfo).port} && echo reached-loopback`, {});
      return { seen: (reply.json as { result: Record<string, string> }).result, svc, install, stopped: () => svc.stop() };
    } catch (error) {
      await svc.stop();
      throw error;
    }
  }

  it('given restricted (the default) and a stale table of a killed instance that refused everything, when code and an install step connect, then the other host is reached but not this host, link-local or a denied CIDR; the table goes at stop', async () => {
    // Given: what a killed instance with WORKER_NETWORK=none left for the range
    must(nft, ['-f', '-'], nftRuleset({ table: TABLE, mode: 'none', range: RANGE, deny: [], serviceAddresses: [], resolvers: [] }));
    // When
    const { seen, install, stopped } = await probe({ WORKER_NETWORK_DENY: `${DENIED4}/32,${DENIED6}` });
    const present = tableExists(nft, TABLE);
    await stopped();
    // Then: the stale table was replaced (the namespace is reached), the rest refused at once
    expect(seen).to.deep.equal({
      ns4: 'ns\n',
      ns6: 'ns\n',
      denied4: 'ConnectionRefusedError',
      denied6: 'ConnectionRefusedError',
      loopback4: 'ConnectionRefusedError',
      loopback6: 'ConnectionRefusedError',
      service: 'ConnectionRefusedError',
      metadata: 'ConnectionRefusedError',
      'udp-loopback': 'PermissionError',
    });
    // The install step too
    expect(install.status).not.to.equal(200);
    expect(install.text).to.include('Connection refused');
    expect(present).to.equal(true);
    expect(tableExists(nft, TABLE), 'table left after stop').to.equal(false);
  });

  it('given none, when code connects, then nothing is reached, the other host included', async () => {
    const { seen, install, stopped } = await probe({ WORKER_NETWORK: 'none' });
    await stopped();
    expect(install.text).to.include('Connection refused');
    expect(seen).to.deep.equal({
      ns4: 'ConnectionRefusedError',
      ns6: 'ConnectionRefusedError',
      denied4: 'ConnectionRefusedError',
      denied6: 'ConnectionRefusedError',
      loopback4: 'ConnectionRefusedError',
      loopback6: 'ConnectionRefusedError',
      service: 'ConnectionRefusedError',
      metadata: 'ConnectionRefusedError',
      'udp-loopback': 'PermissionError',
    });
    expect(tableExists(nft, TABLE)).to.equal(false);
  });

  it('given host, when code connects, then this host\'s loopback and the service are reached as before, and the start warns', async () => {
    const { seen, svc, install, stopped } = await probe({ WORKER_NETWORK: 'host' });
    const present = tableExists(nft, TABLE);
    await stopped();
    // The metadata address would leave this machine unrestricted: the spec's guard drops it, so it hangs.
    expect(seen).to.deep.include({ ns4: 'ns\n', ns6: 'ns\n', denied4: 'ns\n', loopback4: 'lo4\n', loopback6: 'lo6\n', metadata: 'TimeoutError', 'udp-loopback': 'sent' });
    expect(seen.service).to.match(/^HTTP\/1\.1 /);
    expect(install.status, install.text).to.equal(200);
    expect(present).to.equal(false);
    expect(svc.announced.join('\n')).to.include('WARNING: WORKER_NETWORK=host');
  });
});
