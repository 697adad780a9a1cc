import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpMarketplace, type HttpMarketplaceSettings } from './HttpMarketplace.ts';

const TOKEN = 'mkt-token-0123456789abcdef';
const ID = '65a0c0ffee0000000000beef';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** A tiny local HTTP server whose answer each test sets; it records what it was sent. */
const stubServer = async () => {
  let handler: Handler = (_request, response) => response.end('{}');
  const seen: Array<{ url: string; authorization: string | undefined }> = [];
  const server: Server = createServer((request, response) => {
    seen.push({ url: request.url ?? '', authorization: request.headers.authorization });
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    answer(next: Handler) {
      handler = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Handler => (_request, response) => {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
};

describe('marketplace adapter (HttpMarketplace, local HTTP servers)', () => {
  let stub: Awaited<ReturnType<typeof stubServer>>;
  let other: Awaited<ReturnType<typeof stubServer>>;
  const marketplace = (settings: Partial<HttpMarketplaceSettings> = {}) =>
    new HttpMarketplace({ url: stub.url, connectTimeoutMs: 10_000, timeoutMs: 2000, maxBytes: 64 * 1024, ...settings });

  before(async () => {
    stub = await stubServer();
    other = await stubServer();
  });
  after(async () => {
    await stub.close();
    await other.close();
  });

  it('given an item, when fetched, then GET /api/v1/catalog/get?item_laui=<id> is asked with the token as Bearer and the object comes back', async () => {
    stub.answer(json(200, { laui: ID, item_type: 'payload', name: 'p', content: { a: 1 } }));
    const result = await marketplace().fetchItem(ID, TOKEN);
    expect(result).to.deep.equal({ kind: 'item', body: { laui: ID, item_type: 'payload', name: 'p', content: { a: 1 } } });
    expect(stub.seen.at(-1)).to.deep.equal({ url: `/api/v1/catalog/get?item_laui=${ID}`, authorization: `Bearer ${TOKEN}` });
  });

  it('given a base URL with a path and an id with reserved characters, when fetched, then the path is kept and the id is encoded', async () => {
    stub.answer(json(200, { item_type: 'payload', name: 'p' }));
    await new HttpMarketplace({ url: `${stub.url}/market`, connectTimeoutMs: 10_000, timeoutMs: 2000, maxBytes: 1024 }).fetchItem('a&b=c d', TOKEN);
    expect(stub.seen.at(-1)?.url).to.equal('/market/api/v1/catalog/get?item_laui=a%26b%3Dc+d');
  });

  it('given 401, 403 and 404 answers, when fetched, then unauthorized (with the status) and not_found', async () => {
    stub.answer(json(401, { detail: 'User not authenticated' }));
    expect(await marketplace().fetchItem(ID, TOKEN)).to.deep.equal({ kind: 'unauthorized', status: 401 });
    stub.answer(json(403, { detail: 'Password change required' }));
    expect(await marketplace().fetchItem(ID, TOKEN)).to.deep.equal({ kind: 'unauthorized', status: 403 });
    stub.answer(json(404, { detail: `Item not found with laui: ${ID}` }));
    expect(await marketplace().fetchItem(ID, TOKEN)).to.deep.equal({ kind: 'not_found' });
  });

  it('given a 500 whose detail echoes the token, when fetched, then a bad answer quoting the detail with the token masked', async () => {
    stub.answer(json(500, { detail: `Internal server error: bad token ${TOKEN}` }));
    const result = await marketplace().fetchItem(ID, TOKEN);
    expect(result).to.deep.equal({ kind: 'bad_answer', reason: 'HTTP 500: Internal server error: bad token ********' });
  });

  it('given a redirect to another host, when fetched, then it is not followed and the other host receives nothing', async () => {
    stub.answer((_request, response) => {
      response.writeHead(302, { location: `${other.url}/api/v1/catalog/get?item_laui=${ID}` });
      response.end();
    });
    const result = await marketplace().fetchItem(ID, TOKEN);
    expect(result.kind).to.equal('bad_answer');
    expect((result as { reason: string }).reason).to.match(/^HTTP 302: redirects are not followed/);
    expect(other.seen).to.deep.equal([]);
  });

  it('given answers that are not an item (text, an array, 2,000 levels of nesting), when fetched, then bad answers saying why', async () => {
    stub.answer((_request, response) => response.end('<html>proxy error</html>'));
    expect(await marketplace().fetchItem(ID, TOKEN)).to.deep.equal({ kind: 'bad_answer', reason: 'HTTP 200: the answer is not JSON' });
    stub.answer(json(200, [1, 2]));
    expect(await marketplace().fetchItem(ID, TOKEN)).to.deep.equal({ kind: 'bad_answer', reason: 'HTTP 200: the answer is not a catalog item (a JSON object)' });
    stub.answer((_request, response) => response.end(`{"a":${'['.repeat(2000)}${']'.repeat(2000)}}`));
    expect(await marketplace().fetchItem(ID, TOKEN)).to.deep.equal({ kind: 'bad_answer', reason: 'HTTP 200: the answer nests deeper than 64 levels' });
  });

  it('given answers over the size cap, declared or streamed, when fetched, then bad answers and the body is not read to its end', async () => {
    const big = JSON.stringify({ item_type: 'payload', name: 'p', content: { blob: 'x'.repeat(100_000) } });
    stub.answer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(big)) });
      response.end(big);
    });
    expect(await marketplace().fetchItem(ID, TOKEN)).to.deep.equal({ kind: 'bad_answer', reason: 'HTTP 200: the answer is larger than 65536 bytes' });
    // Chunked, no length: endless chunks until the client hangs up.
    stub.answer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => response.write('x'.repeat(16 * 1024)), 1);
      response.on('close', () => clearInterval(timer));
    });
    expect(await marketplace().fetchItem(ID, TOKEN)).to.deep.equal({ kind: 'bad_answer', reason: 'HTTP 200: the answer is larger than 65536 bytes' });
  });

  it('given a marketplace that accepts and never answers, when fetched, then unreachable after the total timeout', async () => {
    stub.answer(() => undefined);
    const started = Date.now();
    const result = await marketplace({ timeoutMs: 300 }).fetchItem(ID, TOKEN);
    expect(result).to.deep.equal({ kind: 'unreachable', reason: 'no complete answer within 0.3 s' });
    // Not before the total timeout (a lower bound: a slower machine only makes it longer); the stub never
    // answers, so without the timeout the test's own would end it.
    expect(Date.now() - started).to.be.at.least(250);
  });

  it('given an answer cut off halfway, when fetched, then unreachable', async () => {
    stub.answer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      response.write('{"item_type":');
      setTimeout(() => response.socket?.destroy(), 20);
    });
    const result = await marketplace().fetchItem(ID, TOKEN);
    expect(result.kind).to.equal('unreachable');
    expect((result as { reason: string }).reason).to.match(/^the answer was cut off/);
  });

  it('given a closed port, when fetched, then unreachable with the refusal', async () => {
    const closed = await stubServer();
    const url = closed.url;
    await closed.close();
    const result = await new HttpMarketplace({ url, connectTimeoutMs: 10_000, timeoutMs: 2000, maxBytes: 1024 }).fetchItem(ID, TOKEN);
    expect(result.kind).to.equal('unreachable');
    expect((result as { reason: string }).reason).to.match(/ECONNREFUSED/);
  });

  it('given a connection that cannot be made (a name that never resolves), when fetched, then unreachable after the connect timeout', async () => {
    const hanging = new HttpMarketplace({ url: 'http://marketplace.invalid', connectTimeoutMs: 200, timeoutMs: 5000, maxBytes: 1024, lookup: () => undefined });
    // The connect timeout's reason, not the total timeout's (5 s): which one ended it is told by the message.
    expect(await hanging.fetchItem(ID, TOKEN)).to.deep.equal({ kind: 'unreachable', reason: 'could not connect to marketplace.invalid within 0.2 s' });
  });
});
