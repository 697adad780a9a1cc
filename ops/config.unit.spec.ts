import { expect } from 'chai';
import { resolve } from 'node:path';
import { loadConfig } from './config.ts';

describe('configuration', () => {
  it('given no variables, when loaded, then the documented defaults apply', () => {
    const config = loadConfig({});
    expect(config).to.include({ port: 8080, host: '127.0.0.1', adminUsername: 'admin', sqliteSynchronous: 'full', workerPoolSize: 2, workerNodeFork: true, workerReuseMaxRuns: 10_000, slaMinuteMs: 60_000 });
    expect(config.workerRunAs).to.equal(null);
    expect(config.workerSandbox).to.equal('auto');
    expect(config.adminPassword).to.equal(null);
  });

  it('given no log settings, when loaded, then the logs root is DATA_DIR/logs, 30 days are kept and a run logs up to 10,000 lines, 1 MiB, 16 KiB per line', () => {
    const config = loadConfig({ DATA_DIR: '/srv/orchestrator' });
    expect(config.logDir).to.equal('/srv/orchestrator/logs');
    expect(config.logRetentionDays).to.equal(30);
    expect(config.runOutput).to.deep.equal({ maxLines: 10_000, maxBytes: 1024 * 1024, maxLineBytes: 16 * 1024 });
  });

  it('given LOG_DIR, LOG_RETENTION_DAYS and the run output caps, when loaded, then they apply; out-of-range values are refused by name', () => {
    const config = loadConfig({ DATA_DIR: '/srv/orchestrator', LOG_DIR: '/var/log/orchestrator', LOG_RETENTION_DAYS: '7', LOG_RUN_MAX_LINES: '500', LOG_RUN_MAX_BYTES: '65536', LOG_LINE_MAX_BYTES: '1024' });
    expect(config.logDir).to.equal('/var/log/orchestrator');
    expect(config.logRetentionDays).to.equal(7);
    expect(config.runOutput).to.deep.equal({ maxLines: 500, maxBytes: 65_536, maxLineBytes: 1024 });
    expect(() => loadConfig({ LOG_RETENTION_DAYS: '0' })).to.throw(/LOG_RETENTION_DAYS must be an integer/);
    expect(() => loadConfig({ LOG_RUN_MAX_LINES: '-1' })).to.throw(/LOG_RUN_MAX_LINES/);
    expect(() => loadConfig({ LOG_LINE_MAX_BYTES: '10' })).to.throw(/LOG_LINE_MAX_BYTES/);
  });

  it('given WORKER_SANDBOX, when loaded, then auto, bwrap or none is kept and anything else refused', () => {
    expect(loadConfig({ WORKER_SANDBOX: 'none' }).workerSandbox).to.equal('none');
    expect(loadConfig({ WORKER_SANDBOX: 'AUTO' }).workerSandbox).to.equal('auto');
    expect(loadConfig({ WORKER_SANDBOX: 'bwrap' }).workerSandbox).to.equal('bwrap');
    expect(() => loadConfig({ WORKER_SANDBOX: 'off' })).to.throw(/WORKER_SANDBOX must be auto, bwrap or none/);
  });

  it('given WORKER_PYTHON, when loaded, then an absolute path is kept, unset is null and a bare name (a PATH lookup) is refused', () => {
    expect(loadConfig({ WORKER_PYTHON: '/opt/venv/bin/python3' }).workerPython).to.equal('/opt/venv/bin/python3');
    expect(loadConfig({}).workerPython).to.equal(null);
    expect(() => loadConfig({ WORKER_PYTHON: 'python3' })).to.throw(/WORKER_PYTHON must be an absolute path/);
  });

  it('given no WORKER_NETWORK, when loaded, then run processes are restricted with no extra CIDR; restricted, none or host is kept and anything else refused', () => {
    expect(loadConfig({}).workerNetwork).to.deep.equal({ mode: 'restricted', deny: [] });
    expect(loadConfig({ WORKER_NETWORK: 'None' }).workerNetwork.mode).to.equal('none');
    expect(loadConfig({ WORKER_NETWORK: 'host' }).workerNetwork.mode).to.equal('host');
    expect(() => loadConfig({ WORKER_NETWORK: 'off' })).to.throw(/WORKER_NETWORK must be restricted, none or host, got "off"/);
  });

  it('given WORKER_NETWORK_DENY, when loaded, then IPv4 and IPv6 CIDRs are kept (a bare address is one host); anything else stops the start naming the entry', () => {
    expect(loadConfig({ WORKER_NETWORK_DENY: ' 10.0.0.0/8, fd00::/8,192.0.2.7 ,2001:db8::1,, 0.0.0.0/0' }).workerNetwork.deny).to.deep.equal([
      '10.0.0.0/8',
      'fd00::/8',
      '192.0.2.7/32',
      '2001:db8::1/128',
      '0.0.0.0/0',
    ]);
    for (const bad of ['10.0.0.0/33', 'fd00::/129', '10.0.0/8', 'example.com', '10.0.0.0/8/1', 'fe80::1%eth0', '10.0.0.0/', '10.0.0.0/-1']) {
      expect(() => loadConfig({ WORKER_NETWORK_DENY: `192.0.2.0/24,${bad}` }), bad).to.throw(`WORKER_NETWORK_DENY must be comma-separated CIDRs (10.0.0.0/8, fd00::/8, 192.0.2.7), got "${bad}"`);
    }
  });

  it('given WORKER_RUN_AS_COUNT with an identity, when loaded, then it is a range of that many; without an identity it is refused', () => {
    expect(loadConfig({ WORKER_RUN_AS_UID: '70000', WORKER_RUN_AS_GID: '70000', WORKER_RUN_AS_COUNT: '64' }).workerRunAs).to.deep.equal({ uid: 70000, gid: 70000, count: 64 });
    expect(() => loadConfig({ WORKER_RUN_AS_COUNT: '64' })).to.throw(/WORKER_RUN_AS_COUNT needs WORKER_RUN_AS_UID/);
    expect(() => loadConfig({ WORKER_RUN_AS_UID: '1', WORKER_RUN_AS_GID: '1', WORKER_RUN_AS_COUNT: '0' })).to.throw(/WORKER_RUN_AS_COUNT must be an integer/);
  });

  it('given a worker identity, when loaded, then both ids are kept; half of one is refused', () => {
    expect(loadConfig({ WORKER_RUN_AS_UID: '65534', WORKER_RUN_AS_GID: '65534' }).workerRunAs).to.deep.equal({ uid: 65534, gid: 65534, count: 1 });
    expect(() => loadConfig({ WORKER_RUN_AS_UID: '65534' })).to.throw('WORKER_RUN_AS_UID and WORKER_RUN_AS_GID must be given together');
    expect(() => loadConfig({ WORKER_RUN_AS_UID: '0', WORKER_RUN_AS_GID: '0' })).to.throw(/WORKER_RUN_AS_UID must be an integer/);
  });

  it('given WORKER_NODE_FORK=false, when loaded, then JavaScript processes are not forked; a bad value is refused', () => {
    expect(loadConfig({ WORKER_NODE_FORK: 'false' }).workerNodeFork).to.equal(false);
    expect(() => loadConfig({ WORKER_NODE_FORK: 'sometimes' })).to.throw(/WORKER_NODE_FORK must be true or false/);
  });

  it('given WORKER_REUSE_MAX_IDLE, when loaded, then that many idle reuse processes are kept in all; by default twice WORKER_CONCURRENCY', () => {
    expect(loadConfig({}).workerReuseMaxIdle).to.equal(16);
    expect(loadConfig({ WORKER_CONCURRENCY: '5' }).workerReuseMaxIdle).to.equal(10);
    expect(loadConfig({ WORKER_REUSE_MAX_IDLE: '40' }).workerReuseMaxIdle).to.equal(40);
    expect(() => loadConfig({ WORKER_REUSE_MAX_IDLE: '0' })).to.throw(/WORKER_REUSE_MAX_IDLE/);
  });

  it('given WORKER_REUSE_MAX_RUNS, when loaded, then reuse processes serve that many runs; zero or a non-integer is refused', () => {
    expect(loadConfig({ WORKER_REUSE_MAX_RUNS: '250' }).workerReuseMaxRuns).to.equal(250);
    expect(() => loadConfig({ WORKER_REUSE_MAX_RUNS: '0' })).to.throw(/WORKER_REUSE_MAX_RUNS/);
    expect(() => loadConfig({ WORKER_REUSE_MAX_RUNS: 'many' })).to.throw(/WORKER_REUSE_MAX_RUNS must be an integer/);
  });

  it('given no logs settings, when loaded, then the logs routes are public and a followed session ends after 300 s without a line; bad values are refused', () => {
    expect(loadConfig({})).to.include({ publicRoutesRequireAuth: false, logFollowIdleSeconds: 300 });
    expect(loadConfig({ PUBLIC_ROUTES_REQUIRE_AUTH: 'true', LOG_FOLLOW_IDLE_SECONDS: '5' })).to.include({ publicRoutesRequireAuth: true, logFollowIdleSeconds: 5 });
    expect(() => loadConfig({ PUBLIC_ROUTES_REQUIRE_AUTH: 'sometimes' })).to.throw(/PUBLIC_ROUTES_REQUIRE_AUTH must be true or false/);
    expect(() => loadConfig({ LOG_FOLLOW_IDLE_SECONDS: '0' })).to.throw(/LOG_FOLLOW_IDLE_SECONDS must be an integer between 1 and 86400/);
  });

  it('given no SHUTDOWN_GRACE_SECONDS, when loaded, then a stop waits 30 s for the work taken; 0 stops the runs at once; bad values are refused by name', () => {
    expect(loadConfig({})).to.include({ shutdownGraceSeconds: 30 });
    expect(loadConfig({ SHUTDOWN_GRACE_SECONDS: '0' })).to.include({ shutdownGraceSeconds: 0 });
    expect(() => loadConfig({ SHUTDOWN_GRACE_SECONDS: '-1' })).to.throw(/SHUTDOWN_GRACE_SECONDS must be an integer between 0 and 86400/);
    expect(() => loadConfig({ SHUTDOWN_GRACE_SECONDS: 'soon' })).to.throw(/SHUTDOWN_GRACE_SECONDS/);
  });

  it('given no stream settings, when loaded, then 256 log streams (192 anonymous, 8 per address, 16 per user) and 64 event streams (10 per user)', () => {
    const config = loadConfig({});
    expect(config.logStreams).to.deep.equal({ total: 256, perUser: 16, anonymous: { total: 192, perAddress: 8 } });
    expect(config.eventStream.shares).to.deep.equal({ total: 64, perUser: 10 });
  });

  it('given stream settings, when loaded, then they apply; a share left at its default is lowered to a smaller total; a share above the total is refused by name', () => {
    const config = loadConfig({ LOG_STREAMS_MAX: '20', LOG_STREAMS_ANONYMOUS_MAX: '0', LOG_STREAMS_PER_ADDRESS: '2', LOG_STREAMS_PER_USER: '5', EVENTS_STREAMS_MAX: '4', EVENTS_STREAMS_PER_USER: '1' });
    expect(config.logStreams).to.deep.equal({ total: 20, perUser: 5, anonymous: { total: 0, perAddress: 2 } });
    expect(config.eventStream.shares).to.deep.equal({ total: 4, perUser: 1 });
    expect(loadConfig({ LOG_STREAMS_MAX: '4' }).logStreams).to.deep.equal({ total: 4, perUser: 4, anonymous: { total: 4, perAddress: 4 } });
    expect(() => loadConfig({ LOG_STREAMS_MAX: '4', LOG_STREAMS_PER_USER: '5' })).to.throw(/LOG_STREAMS_PER_USER must be an integer between 1 and LOG_STREAMS_MAX \(4\), got "5"/);
    expect(() => loadConfig({ LOG_STREAMS_PER_ADDRESS: '0' })).to.throw(/LOG_STREAMS_PER_ADDRESS must be/);
    expect(() => loadConfig({ LOG_STREAMS_MAX: '0' })).to.throw(/LOG_STREAMS_MAX must be/);
    expect(() => loadConfig({ EVENTS_STREAMS_MAX: '2', EVENTS_STREAMS_PER_USER: '3' })).to.throw(/EVENTS_STREAMS_PER_USER must be/);
  });

  it('given no query settings, when loaded, then POST /query/execute has the spec limits (2 minutes, 10 s, 10,000 rows) and 32 MiB of answer; bad values are refused', () => {
    expect(loadConfig({}).query).to.deep.equal({ statementTimeoutMs: 120_000, connectTimeoutMs: 10_000, maxRows: 10_000, maxBytes: 32 * 1024 * 1024 });
    expect(loadConfig({ QUERY_TIMEOUT_SECONDS: '5', QUERY_CONNECT_TIMEOUT_SECONDS: '1', QUERY_MAX_ROWS: '10', QUERY_MAX_BYTES: '4096' }).query).to.deep.equal({ statementTimeoutMs: 5000, connectTimeoutMs: 1000, maxRows: 10, maxBytes: 4096 });
    expect(() => loadConfig({ QUERY_CONNECT_TIMEOUT_SECONDS: '0.5' })).to.throw(/QUERY_CONNECT_TIMEOUT_SECONDS must be an integer/);
    expect(() => loadConfig({ QUERY_MAX_BYTES: '100' })).to.throw(/QUERY_MAX_BYTES must be an integer between 1024 and 268435456/);
  });

  it('given no MCP settings, when loaded, then the agent uses the service\'s own /mcp with a 150 s tool bound; a URL that is not http(s) is refused', () => {
    expect(loadConfig({}).mcp).to.deep.equal({ serverUrl: null, serverToken: null, toolTimeoutMs: 150_000 });
    expect(loadConfig({ MCP_SERVER_URL: 'https://tools.example/mcp', MCP_SERVER_TOKEN: 't', MCP_TOOL_TIMEOUT_SECONDS: '10' }).mcp).to.deep.equal({
      serverUrl: 'https://tools.example/mcp',
      serverToken: 't',
      toolTimeoutMs: 10_000,
    });
    expect(() => loadConfig({ MCP_SERVER_URL: 'file:///etc/passwd' })).to.throw(/MCP_SERVER_URL must be an http\(s\) URL/);
    expect(() => loadConfig({ MCP_SERVER_URL: 'not a url' })).to.throw(/MCP_SERVER_URL must be an http\(s\) URL/);
  });

  it('given malformed values, when loaded, then the error names the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).to.throw(/PORT must be an integer/);
    expect(() => loadConfig({ EMAIL_TOTP: 'maybe' })).to.throw(/EMAIL_TOTP must be true or false/);
    expect(() => loadConfig({ SQLITE_SYNCHRONOUS: 'off' })).to.throw(/SQLITE_SYNCHRONOUS must be full or normal/);
  });

  it('given no throttle settings, when loaded, then the documented login limits apply and no proxy is trusted', () => {
    const config = loadConfig({});
    expect(config.trustProxyHops).to.equal(0);
    expect(config.throttle).to.deep.equal({
      login: {
        perUserAddress: { maxFailures: 5, windowSeconds: 900, blockSeconds: 60, maxBlockSeconds: 3600 },
        maxFailuresPerAddress: 50,
        maxFailuresPerUsername: 500,
        knownAddressSeconds: 14 * 24 * 3600,
      },
      tokenMaxFailuresPerAddress: 100,
      passwordChangeMaxFailures: 5,
      mailsPerAddressPerHour: 10,
    });
  });

  it('given SMTP_URL and MAIL_FROM, when loaded, then mail goes through that server: smtps:// on 465 with TLS, smtp:// on 587, credentials from the URL or SMTP_USER/SMTP_PASSWORD', () => {
    expect(loadConfig({ SMTP_URL: 'smtps://mailer:p%40ss%3Aword@mail.example', MAIL_FROM: 'orchestrator@example.com' }).mail).to.deep.equal({
      transport: 'smtp',
      from: 'orchestrator@example.com',
      smtp: { secure: true, host: 'mail.example', port: 465, auth: { user: 'mailer', pass: 'p@ss:word' }, timeoutMs: 10_000 },
    });
    const env = { SMTP_URL: 'smtp://[::1]:2525', SMTP_USER: 'mailer', SMTP_PASSWORD: 'secret', MAIL_FROM: 'Orchestrator <o@example.com>', SMTP_TIMEOUT_SECONDS: '3' };
    expect(loadConfig(env).mail).to.deep.equal({
      transport: 'smtp',
      from: 'Orchestrator <o@example.com>',
      smtp: { secure: false, host: '::1', port: 2525, auth: { user: 'mailer', pass: 'secret' }, timeoutMs: 3000 },
    });
    expect(loadConfig({ SMTP_URL: 'smtp://relay.internal', MAIL_FROM: 'o@example.com', EMAIL_TOTP: 'true' }).mail).to.deep.include({ transport: 'smtp' });
    expect(loadConfig({ SMTP_URL: 'smtp://relay.internal', MAIL_FROM: 'o@example.com' }).mail).to.have.nested.property('smtp.port', 587);
  });

  it('given EMAIL_TOTP=true without SMTP_URL, when loaded, then the start is refused naming SMTP_URL, MAIL_FROM and MAIL_TRANSPORT=log; MAIL_TRANSPORT=log alone is the stand-in', () => {
    expect(() => loadConfig({ EMAIL_TOTP: 'true' })).to.throw(/EMAIL_TOTP=true sends sign-in codes by mail, and no mail server is set: set SMTP_URL .* and MAIL_FROM, or MAIL_TRANSPORT=log/);
    expect(loadConfig({ EMAIL_TOTP: 'true', MAIL_TRANSPORT: 'log' }).mail).to.deep.equal({ transport: 'log' });
    expect(loadConfig({}).mail).to.deep.equal({ transport: 'none' });
  });

  it('given inconsistent mail settings, when loaded, then the error names the variable and never quotes a password', () => {
    const from = { MAIL_FROM: 'o@example.com' };
    const refusals: Array<[Record<string, string>, RegExp]> = [
      [{ SMTP_URL: 'http://mail.example', ...from }, /SMTP_URL must start with smtp:\/\/ or smtps:\/\//],
      [{ SMTP_URL: 'not a url', ...from }, /SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/],
      [{ SMTP_URL: 'smtp://mail.example/?secure=false', ...from }, /SMTP_URL must be smtp:\/\/mail.example alone, without a path, query or fragment/],
      [{ SMTP_URL: 'smtp://u:hunter2@mail.example', SMTP_USER: 'u', SMTP_PASSWORD: 'x', ...from }, /SMTP credentials are given twice/],
      [{ SMTP_URL: 'smtp://u@mail.example', ...from }, /SMTP_URL credentials need both a user and a password/],
      [{ SMTP_URL: 'smtp://mail.example', SMTP_USER: 'u', ...from }, /SMTP_USER and SMTP_PASSWORD must be given together/],
      [{ SMTP_URL: 'smtp://u:hunter2@mail.example' }, /MAIL_FROM must name the sender/],
      [{ SMTP_URL: 'smtp://mail.example', MAIL_FROM: 'nobody' }, /MAIL_FROM must be an address/],
      [{ SMTP_URL: 'smtp://mail.example', MAIL_FROM: 'a@b.example\r\nBcc: c@d.example' }, /MAIL_FROM must be an address/],
      [{ SMTP_URL: 'smtp://mail.example', MAIL_TRANSPORT: 'log', ...from }, /MAIL_TRANSPORT=log and SMTP_URL exclude each other/],
      [{ MAIL_TRANSPORT: 'smtp' }, /MAIL_TRANSPORT=smtp needs SMTP_URL/],
      [{ MAIL_TRANSPORT: 'pigeon' }, /MAIL_TRANSPORT must be smtp or log/],
      [{ SMTP_PASSWORD: 'hunter2' }, /SMTP_PASSWORD needs SMTP_URL/],
      [{ SMTP_URL: 'smtp://mail.example', SMTP_TIMEOUT_SECONDS: '0', ...from }, /SMTP_TIMEOUT_SECONDS must be an integer between 1 and 300/],
      [{ MAIL_MAX_PER_ADDRESS_PER_HOUR: '0' }, /MAIL_MAX_PER_ADDRESS_PER_HOUR must be an integer/],
    ];
    for (const [env, message] of refusals) {
      let thrown: unknown = null;
      try {
        loadConfig(env);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(env)).to.be.instanceOf(Error);
      expect((thrown as Error).message).to.match(message).and.not.include('hunter2');
    }
  });

  it('given inconsistent or out-of-range throttle settings, when loaded, then the error names the variable', () => {
    expect(() => loadConfig({ LOGIN_BLOCK_SECONDS: '600', LOGIN_MAX_BLOCK_SECONDS: '60' })).to.throw(/LOGIN_MAX_BLOCK_SECONDS must be at least/);
    expect(() => loadConfig({ LOGIN_KNOWN_ADDRESS_DAYS: '30' })).to.throw(/LOGIN_KNOWN_ADDRESS_DAYS must be an integer between 1 and 24/);
    expect(() => loadConfig({ LOGIN_MAX_FAILURES: '0' })).to.throw(/LOGIN_MAX_FAILURES must be an integer/);
    expect(() => loadConfig({ TRUST_PROXY_HOPS: 'yes' })).to.throw(/TRUST_PROXY_HOPS must be an integer/);
  });

  it('given no bus settings, when loaded, then the bus is in process', () => {
    expect(loadConfig({}).bus).to.deep.equal({ kind: 'in-process' });
    expect(loadConfig({ BUS: 'in-process' }).bus).to.deep.equal({ kind: 'in-process' });
  });

  it('given BUS=kafka with brokers, when loaded, then the brokers are listed and the client id defaults', () => {
    expect(loadConfig({ BUS: 'kafka', KAFKA_BROKERS: 'kafka-1:9092, 10.0.0.7:9093,[::1]:9094' }).bus).to.deep.equal({
      kind: 'kafka',
      brokers: ['kafka-1:9092', '10.0.0.7:9093', '[::1]:9094'],
      clientId: 'pipeline-orchestrator',
      topicPrefix: '',
      sessionTimeoutMs: 30_000,
      ssl: null,
      sasl: null,
    });
    expect(loadConfig({ BUS: 'KAFKA', KAFKA_BROKERS: 'k:9092', KAFKA_CLIENT_ID: 'scheduler-3' }).bus).to.include({ clientId: 'scheduler-3' });
  });

  it('given KAFKA_BROKERS without BUS, when loaded, then the bus is Kafka; with BUS=in-process it stays in process', () => {
    expect(loadConfig({ KAFKA_BROKERS: 'k:9092' }).bus).to.include({ kind: 'kafka' });
    expect(loadConfig({ BUS: 'in-process', KAFKA_BROKERS: 'k:9092' }).bus).to.deep.equal({ kind: 'in-process' });
  });

  it('given a bad bus setting, when loaded, then the error names the variable', () => {
    expect(() => loadConfig({ BUS: 'rabbitmq' })).to.throw('BUS must be in-process or kafka, got "rabbitmq"');
    expect(() => loadConfig({ BUS: 'kafka' })).to.throw(/KAFKA_BROKERS must list the Kafka brokers/);
    for (const brokers of ['kafka-1', 'kafka-1:0', 'kafka-1:70000', 'kafka-1:9092,,kafka-2:9092', 'kafka 1:9092', 'http://kafka:9092']) {
      expect(() => loadConfig({ BUS: 'kafka', KAFKA_BROKERS: brokers }), brokers).to.throw(/KAFKA_BROKERS must be a comma-separated list of host:port/);
    }
  });

  it('given KAFKA_TOPIC_PREFIX, when loaded, then it is kept; a name Kafka refuses stops the start', () => {
    expect(loadConfig({ KAFKA_BROKERS: 'k:9092', KAFKA_TOPIC_PREFIX: 'staging.' }).bus).to.include({ topicPrefix: 'staging.' });
    expect(() => loadConfig({ KAFKA_BROKERS: 'k:9092', KAFKA_TOPIC_PREFIX: 'a/b' })).to.throw(/KAFKA_TOPIC_PREFIX must be/);
    expect(loadConfig({ KAFKA_BROKERS: 'k:9092', KAFKA_SESSION_TIMEOUT_MS: '6000' }).bus).to.include({ sessionTimeoutMs: 6000 });
    expect(() => loadConfig({ KAFKA_BROKERS: 'k:9092', KAFKA_SESSION_TIMEOUT_MS: '1000' })).to.throw(/KAFKA_SESSION_TIMEOUT_MS must be an integer between 6000/);
  });

  describe('Kafka security (KAFKA_SSL, KAFKA_SASL_*)', () => {
    const kafka = (env: NodeJS.ProcessEnv) => {
      const { bus } = loadConfig({ KAFKA_BROKERS: 'k:9093', ...env });
      if (bus.kind !== 'kafka') throw new Error('not the Kafka bus');
      return bus;
    };
    const PASSWORD = 'pa55-Word-Never-Shown';

    it('given KAFKA_SSL=true alone, when loaded, then TLS is on with no files (Node\'s public CAs)', () => {
      expect(kafka({ KAFKA_SSL: 'true' })).to.deep.include({ ssl: { caFile: null, certFile: null, keyFile: null }, sasl: null });
      expect(kafka({ KAFKA_SSL: 'false' })).to.deep.include({ ssl: null });
    });

    it('given KAFKA_SSL with a CA, a client certificate and its key, when loaded, then the paths are kept, a relative one taken from the working directory', () => {
      expect(kafka({ KAFKA_SSL: 'yes', KAFKA_SSL_CA_FILE: '/etc/kafka/ca.pem', KAFKA_SSL_CERT_FILE: '/etc/kafka/client.pem', KAFKA_SSL_KEY_FILE: 'client.key' }).ssl).to.deep.equal({
        caFile: '/etc/kafka/ca.pem',
        certFile: '/etc/kafka/client.pem',
        keyFile: resolve('client.key'),
      });
    });

    it('given a KAFKA_SSL_* file without KAFKA_SSL=true, when loaded, then the start stops: the bus would connect in plaintext', () => {
      expect(() => kafka({ KAFKA_SSL_CA_FILE: '/ca.pem' })).to.throw('KAFKA_SSL_CA_FILE needs KAFKA_SSL=true');
      expect(() => kafka({ KAFKA_SSL: 'false', KAFKA_SSL_CERT_FILE: '/c.pem', KAFKA_SSL_KEY_FILE: '/k.pem' })).to.throw('KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE need KAFKA_SSL=true');
      expect(() => kafka({ KAFKA_SSL: 'maybe' })).to.throw('KAFKA_SSL must be true or false');
    });

    it('given a client certificate without its key, or a key without its certificate, when loaded, then the start stops', () => {
      expect(() => kafka({ KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: '/c.pem' })).to.throw('KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE must be given together');
      expect(() => kafka({ KAFKA_SSL: 'true', KAFKA_SSL_KEY_FILE: '/k.pem' })).to.throw('KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE must be given together');
    });

    it('given each SASL mechanism with a username and password, when loaded, then they are kept (the mechanism in lower case)', () => {
      for (const [given, mechanism] of [['plain', 'plain'], ['SCRAM-SHA-256', 'scram-sha-256'], ['scram-sha-512', 'scram-sha-512']]) {
        expect(kafka({ KAFKA_SSL: 'true', KAFKA_SASL_MECHANISM: given, KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: PASSWORD }).sasl, given).to.deep.equal({ mechanism, username: 'svc', password: PASSWORD });
      }
      expect(kafka({ KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: PASSWORD })).to.deep.include({ ssl: null });
    });

    it('given a SASL setting that is wrong or half given, when loaded, then the start stops naming the variable and never showing the password', () => {
      const cases: Array<[NodeJS.ProcessEnv, string]> = [
        [{ KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: PASSWORD }, 'KAFKA_SASL_MECHANISM must be one of plain, scram-sha-256, scram-sha-512, got "gssapi"'],
        [{ KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_PASSWORD: PASSWORD }, 'KAFKA_SASL_MECHANISM=scram-sha-512 needs KAFKA_SASL_USERNAME'],
        [{ KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'svc' }, 'KAFKA_SASL_MECHANISM=scram-sha-512 needs KAFKA_SASL_PASSWORD'],
        [{ KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: PASSWORD }, 'KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD need KAFKA_SASL_MECHANISM'],
        [{ KAFKA_SASL_PASSWORD: PASSWORD }, 'KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD need KAFKA_SASL_MECHANISM'],
        [{ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: PASSWORD }, 'KAFKA_SASL_MECHANISM=plain sends the password in clear: it needs KAFKA_SSL=true'],
      ];
      for (const [env, message] of cases) {
        let error: unknown = null;
        try {
          kafka(env);
        } catch (thrown) {
          error = thrown;
        }
        expect(error, message).to.be.instanceOf(Error);
        expect((error as Error).message).to.include(message);
        expect((error as Error).message).not.to.include(PASSWORD);
      }
    });

    it('given KAFKA_SSL and KAFKA_SASL_* with the in-process bus, when loaded, then they are not read (as KAFKA_BROKERS is not)', () => {
      expect(loadConfig({ BUS: 'in-process', KAFKA_SSL: 'bogus', KAFKA_SASL_MECHANISM: 'gssapi' }).bus).to.deep.equal({ kind: 'in-process' });
    });
  });

  it('given no role, store or read-store setting, when loaded, then one process runs everything on SQLite and memory', () => {
    const config = loadConfig({});
    expect(config.role).to.equal('all');
    expect(config.eventStore).to.deep.equal({ kind: 'sqlite' });
    expect(config.readStore).to.deep.equal({ kind: 'memory' });
  });

  it('given a role with a Kafka bus, when loaded, then the role is kept; without a shared bus it is refused', () => {
    for (const role of ['api', 'projector', 'worker', 'scheduler']) {
      expect(loadConfig({ ROLE: role, KAFKA_BROKERS: 'k:9092' }).role).to.equal(role);
      expect(() => loadConfig({ ROLE: role }), role).to.throw(`role ${role} needs a shared bus`);
    }
    expect(loadConfig({ ROLE: 'ALL' }).role).to.equal('all');
    expect(() => loadConfig({ ROLE: 'web' })).to.throw('ROLE must be one of all, api, projector, worker, scheduler, got "web"');
  });

  it('given EVENTSTORE_URL and MONGO_URL, when loaded, then the distributed stores are chosen; malformed ones stop the start', () => {
    expect(loadConfig({ EVENTSTORE_URL: 'kurrentdb://es:2113?tls=false' }).eventStore).to.deep.equal({ kind: 'kurrentdb', connectionString: 'kurrentdb://es:2113?tls=false' });
    expect(loadConfig({ EVENTSTORE_URL: 'esdb+discover://a:2113,b:2113' }).eventStore).to.include({ kind: 'kurrentdb' });
    expect(() => loadConfig({ EVENTSTORE_URL: 'http://es:2113' })).to.throw(/EVENTSTORE_URL must be/);
    expect(loadConfig({ MONGO_URL: 'mongodb://m:27017/?replicaSet=rs0' }).readStore).to.deep.equal({ kind: 'mongodb', url: 'mongodb://m:27017/?replicaSet=rs0', database: 'orchestrator' });
    expect(loadConfig({ MONGO_URL: 'mongodb+srv://cluster.example', MONGO_DATABASE: 'prod_1' }).readStore).to.include({ database: 'prod_1' });
    expect(() => loadConfig({ MONGO_URL: 'postgres://x' })).to.throw(/MONGO_URL must be/);
    expect(() => loadConfig({ MONGO_URL: 'mongodb://m', MONGO_DATABASE: 'a.b' })).to.throw(/MONGO_DATABASE must be/);
    expect(() => loadConfig({ MONGO_DATABASE: 'x' })).to.throw('MONGO_DATABASE needs MONGO_URL');
  });

  it('given no marketplace settings, when loaded, then no marketplace is configured, a fetch takes at most 30 s and 5 MiB, and connecting 10 s', () => {
    expect(loadConfig({}).marketplace).to.deep.equal({ url: null, connectTimeoutMs: 10_000, timeoutMs: 30_000, maxBytes: 5 * 1024 * 1024 });
  });

  it('given MARKETPLACE_URL and its limits, when loaded, then the URL is kept without trailing slash; credentials, a query, another scheme or a bad limit are refused by name', () => {
    const config = loadConfig({ MARKETPLACE_URL: 'https://market.example.com/base/', MARKETPLACE_TIMEOUT_SECONDS: '2', MARKETPLACE_MAX_BYTES: '65536' });
    expect(config.marketplace).to.deep.equal({ url: 'https://market.example.com/base', connectTimeoutMs: 10_000, timeoutMs: 2000, maxBytes: 65_536 });
    expect(loadConfig({ MARKETPLACE_URL: 'http://127.0.0.1:8081' }).marketplace.url).to.equal('http://127.0.0.1:8081');
    expect(() => loadConfig({ MARKETPLACE_URL: 'https://user:secret@market.example.com' })).to.throw(/MARKETPLACE_URL must not hold credentials/);
    expect(() => loadConfig({ MARKETPLACE_URL: 'https://market.example.com/?x=1' })).to.throw(/MARKETPLACE_URL must not have a query/);
    expect(() => loadConfig({ MARKETPLACE_URL: 'ftp://market.example.com' })).to.throw(/MARKETPLACE_URL must be an http or https URL/);
    expect(() => loadConfig({ MARKETPLACE_URL: 'market.example.com' })).to.throw(/MARKETPLACE_URL must be an http or https URL/);
    expect(() => loadConfig({ MARKETPLACE_TIMEOUT_SECONDS: '0' })).to.throw(/MARKETPLACE_TIMEOUT_SECONDS must be an integer/);
    expect(() => loadConfig({ MARKETPLACE_MAX_BYTES: '10' })).to.throw(/MARKETPLACE_MAX_BYTES must be an integer/);
  });
});
