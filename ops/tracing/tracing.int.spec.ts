import { expect } from 'chai';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { catalogClient, waitForItem, type CatalogClient } from '../../test/support/catalogFixture.ts';
import { taskBed } from '../../test/support/taskBed.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { tracingConfigFrom } from './tracingConfig.ts';

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number };
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
}

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A local OTLP/HTTP receiver: what the service exports to POST /v1/traces. */
const startReceiver = async (): Promise<{ server: Server; url: string; received: Received[] }> => {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') received.push({ headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(200, { 'content-type': String(request.headers['content-type'] ?? 'application/json') });
      response.end(request.headers['content-type'] === 'application/json' ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
};

const spansOf = (received: Received[]): Array<OtlpSpan & { service: string | undefined }> =>
  received.flatMap((request) => {
    const body = JSON.parse(request.body.toString('utf8')) as { resourceSpans: Array<{ resource: { attributes: OtlpAttribute[] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
    return body.resourceSpans.flatMap((resource) => {
      const service = resource.resource.attributes.find((attribute) => attribute.key === 'service.name')?.value.stringValue;
      return resource.scopeSpans.flatMap((scope) => scope.spans.map((span) => ({ ...span, service })));
    });
  });

const attribute = (span: OtlpSpan, key: string): string | undefined => span.attributes?.find((entry) => entry.key === key)?.value.stringValue;

const waitFor = async <T>(what: string, read: () => T | undefined, timeoutMs = 60_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('OpenTelemetry traces (OTLP/HTTP to a local receiver; embedded service)', function () {
  this.timeout(120_000);

  describe('http/json', () => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let svc: TestService;
    let admin: CatalogClient;

    before(async () => {
      receiver = await startReceiver();
      svc = await startTestService({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'orchestrator-spec', OTEL_BSP_SCHEDULE_DELAY: '100' });
      admin = catalogClient(svc, (await svc.login()).token);
    });

    after(async () => {
      await svc?.stop();
      receiver?.server.close();
    });

    it('given a manual run, when it ends, then the request, its dispatch, the pick-up, the run and the end are spans of one trace, each run span naming task.laui', async () => {
      const bed = await taskBed(admin, 'traced-co', { name: 'c', content: {}, max_parallelism: 1 });
      const operator = await admin.createOk({ item_type: 'operator', name: 'noop.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: 'export function run() { return null; }\n' } });
      const task = await admin.createOk({ item_type: 'task', ...bed.taskBody('traced', operator) });
      const reply = await svc.client().post('/api/v1/task/run', { json: { item_laui: task }, token: admin.token });
      expect(reply.status, reply.text).to.equal(200);
      await waitForItem<{ state: string }>(admin, task, (item) => item.state === 'success', 60_000);

      const http = await waitFor('the request span', () => spansOf(receiver.received).find((span) => span.name === 'POST /api/v1/task/run'));
      const trace = (name: string) => waitFor(name, () => spansOf(receiver.received).find((span) => span.name === name && span.traceId === http.traceId));
      const [dispatch, execute, pickup, run, end] = await Promise.all(['task.dispatch', 'task.execute', 'task.pickup', 'task.run', 'task.end'].map(trace));
      expect(http.kind, 'a server span').to.equal(2);
      expect(http.service).to.equal('orchestrator-spec');
      expect(attribute(http, 'http.route')).to.equal('/api/v1/task/run');
      expect(dispatch?.parentSpanId).to.equal(http.spanId);
      expect(execute?.parentSpanId, 'the worker span continues the dispatch across the bus').to.equal(dispatch?.spanId);
      for (const span of [pickup, run, end]) expect(span?.parentSpanId, span?.name).to.equal(execute?.spanId);
      for (const span of [dispatch, execute, pickup, run, end]) expect(attribute(span as OtlpSpan, 'task.laui'), span?.name).to.equal(task);
    });

    it('given a caller that sends traceparent, when it calls, then the request span continues the caller\'s trace', async () => {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const reply = await svc.client().get('/api/v1/user/me', { token: admin.token, headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
      expect(reply.status).to.equal(200);
      const span = await waitFor('the request span', () => spansOf(receiver.received).find((candidate) => candidate.name === 'GET /api/v1/user/me' && candidate.traceId === traceId));
      expect(span.parentSpanId).to.equal('00f067aa0ba902b7');
    });
  });

  describe('http/protobuf (the default protocol)', () => {
    it('given only an endpoint, when a request is answered, then spans arrive as protobuf at /v1/traces', async () => {
      const receiver = await startReceiver();
      const svc = await startTestService({ OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`, OTEL_BSP_SCHEDULE_DELAY: '100' });
      try {
        expect((await svc.client().get('/api/v1/openapi.json')).status).to.equal(200);
        const request = await waitFor('an export', () => receiver.received[0]);
        expect(request.headers['content-type']).to.equal('application/x-protobuf');
        expect(request.body.includes(Buffer.from('GET /api/v1/openapi.json')), 'the span name in the message').to.equal(true);
      } finally {
        await svc.stop();
        receiver.server.close();
      }
    });
  });

  describe('configuration (the standard OTEL_* variables)', () => {
    it('given no endpoint, or OTEL_SDK_DISABLED, then tracing is off', () => {
      expect(tracingConfigFrom({})).to.equal(null);
      expect(tracingConfigFrom({ OTEL_SERVICE_NAME: 'x' })).to.equal(null);
      expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).to.equal(null);
    });

    it('given endpoints, protocols and headers, then the traces URL and settings follow the standard; grpc and bad values are refused by name', () => {
      expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).to.deep.include({ tracesUrl: 'http://collector:4318/v1/traces', protocol: 'http/protobuf', serviceName: 'pipeline-orchestrator' });
      expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/custom' })?.tracesUrl).to.equal('https://b/custom');
      expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=s%20x,tenant=t1' })).to.deep.include({ protocol: 'http/json', headers: { 'api-key': 's x', tenant: 't1' } });
      expect(() => tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).to.throw(/OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported/);
      expect(() => tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).to.throw(/OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL|the OTLP endpoint must be an http\(s\) URL/);
    });
  });
});
