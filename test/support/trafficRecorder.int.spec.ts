import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTraffic } from '../contracts/openApiTraffic.ts';
import { HttpClient } from './HttpClient.ts';
import { rawRequest } from './rawRequest.ts';
import { SseClient } from './sseClient.ts';
import { recordedFetch, recordingTest } from './trafficRecorder.ts';

/**
 * The recorder behind the OpenAPI conformance check: every test client writes what it got. A plain
 * HTTP server stands in for the service (its answers need not be documented here: the recording is
 * moved to a folder of this spec's own, and the run's own folder is put back after).
 */
describe('traffic recorder (OPENAPI_TRAFFIC_DIR) of the test clients', () => {
  let server: Server;
  let url: string;
  let dir: string;
  let runDir: string | undefined;

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/events') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"n":1}\n\n');
        return;
      }
      if (req.url?.startsWith('/chunked')) {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.write('{"chunked":');
        res.end('true}');
        return;
      }
      res.writeHead(req.url === '/missing' ? 404 : 200, { 'content-type': req.url === '/page' ? 'text/html' : 'application/json; charset=utf-8' });
      res.end(req.url === '/page' ? '<p>hi</p>' : JSON.stringify({ path: req.url, method: req.method }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  beforeEach(() => {
    runDir = process.env.OPENAPI_TRAFFIC_DIR;
    dir = mkdtempSync(join(tmpdir(), 'traffic-spec-'));
    process.env.OPENAPI_TRAFFIC_DIR = dir;
  });

  afterEach(() => {
    if (runDir === undefined) delete process.env.OPENAPI_TRAFFIC_DIR;
    else process.env.OPENAPI_TRAFFIC_DIR = runDir;
    rmSync(dir, { recursive: true, force: true });
  });

  it('given each test client, when it gets answers, then each answer is one line: method, path with query, status, content type and JSON body', async () => {
    recordingTest('a spec: a test');
    const client = new HttpClient(url);
    await client.get('/things?page=2');
    await client.post('/missing', { json: { a: 1 } });
    await client.get('/page');
    await rawRequest(url, { method: 'GET', path: '/chunked/raw' });
    const response = await recordedFetch(`${url}/fetched`, { method: 'DELETE' });
    expect(await response.json(), 'the caller still reads the body').to.deep.equal({ path: '/fetched', method: 'DELETE' });
    const sse = SseClient.open(url, '/events');
    await sse.waitFor(() => sse.frames.length > 0);
    sse.close();
    recordingTest(undefined);

    const lines = readTraffic(dir);
    expect(lines).to.deep.equal([
      { method: 'GET', path: '/things?page=2', status: 200, contentType: 'application/json; charset=utf-8', bodyLength: 40, json: { path: '/things?page=2', method: 'GET' }, test: 'a spec: a test' },
      { method: 'POST', path: '/missing', status: 404, contentType: 'application/json; charset=utf-8', bodyLength: 35, json: { path: '/missing', method: 'POST' }, test: 'a spec: a test' },
      { method: 'GET', path: '/page', status: 200, contentType: 'text/html', bodyLength: 9, test: 'a spec: a test' },
      { method: 'GET', path: '/chunked/raw', status: 201, contentType: 'application/json', bodyLength: 16, json: { chunked: true }, test: 'a spec: a test' },
      { method: 'DELETE', path: '/fetched', status: 200, contentType: 'application/json; charset=utf-8', bodyLength: 37, json: { path: '/fetched', method: 'DELETE' }, test: 'a spec: a test' },
      { method: 'GET', path: '/events', status: 200, contentType: 'text/event-stream', bodyLength: 0, unread: true, test: 'a spec: a test' },
    ]);
  });

  it('given OPENAPI_TRAFFIC_DIR unset, when a client gets an answer, then nothing is written', async () => {
    delete process.env.OPENAPI_TRAFFIC_DIR;
    await new HttpClient(url).get('/things');
    expect(readTraffic(dir)).to.deep.equal([]);
  });
});
