import { expect } from 'chai';
import { API_ROUTE_DOCS, apiInfo } from '../../ops/http/apiRouteDocs.ts';
import { openApiDocument } from '../../ops/http/openApiDocument.ts';
import type { RecordedExchange } from '../support/trafficRecorder.ts';
import { checkTraffic, documentProblems, formatProblems, trafficChecker } from './openApiTraffic.ts';

/** A small OpenAPI 3.1 document written by hand: the checker must not depend on how ours is built. */
const DOC = {
  openapi: '3.1.0',
  info: { title: 'Tiny', version: '1' },
  paths: {
    '/items/{id}': {
      get: {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': { description: 'An item', content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } },
          '404': { $ref: '#/components/responses/NotFound' },
        },
      },
    },
    '/items/all': {
      get: { responses: { '200': { description: 'All', content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Item' } } } } } } },
    },
    '/files/{path}': {
      get: {
        parameters: [{ name: 'path', in: 'path', required: true, schema: { type: 'string' }, 'x-multi-segment': true }],
        responses: { '200': { description: 'A file', content: { 'text/*': { schema: { type: 'string' } } } } },
      },
    },
    '/go': { post: { responses: { '303': { description: 'Elsewhere' }, '4XX': { $ref: '#/components/responses/NotFound' } } } },
  },
  components: {
    schemas: {
      Item: { type: 'object', properties: { id: { type: 'string' }, size: { type: 'integer', minimum: 0 } }, required: ['id'] },
      Detail: { type: 'object', properties: { detail: { type: 'string' } }, required: ['detail'] },
    },
    responses: {
      NotFound: { description: 'Not found', content: { 'application/json': { schema: { $ref: '#/components/schemas/Detail' } } } },
      MethodNotAllowed: { description: 'Not this method', content: { 'application/json': { schema: { $ref: '#/components/schemas/Detail' } } } },
    },
  },
  'x-unrouted': {
    path: { '404': { $ref: '#/components/responses/NotFound' } },
    method: { '404': { $ref: '#/components/responses/NotFound' }, '405': { $ref: '#/components/responses/MethodNotAllowed' } },
  },
};

const answer = (overrides: Partial<RecordedExchange> & Pick<RecordedExchange, 'path' | 'status'>): RecordedExchange => {
  const json = 'json' in overrides ? overrides.json : undefined;
  const text = json === undefined ? '' : JSON.stringify(json);
  return { method: 'GET', contentType: json === undefined ? '' : 'application/json; charset=utf-8', bodyLength: text.length, ...overrides };
};

const kinds = (exchange: RecordedExchange): string[] => trafficChecker(DOC)(exchange).map((problem) => problem.kind);

describe('OpenAPI conformance of recorded traffic (test/contracts/openApiTraffic.ts)', () => {
  describe('documented answers', () => {
    it('given answers the document describes, when checked, then nothing is reported', () => {
      const documented = [
        answer({ path: '/items/a1', status: 200, json: { id: 'a1', size: 3 } }),
        answer({ path: '/items/a1?fields=all', status: 404, json: { detail: 'Item not found' } }),
        answer({ path: '/items/all', status: 200, json: [{ id: 'a' }, { id: 'b' }] }),
        answer({ path: '/files/logs/2024/app.log', status: 200, contentType: 'text/plain; charset=utf-8', bodyLength: 12 }),
        answer({ method: 'POST', path: '/go', status: 303, contentType: 'text/plain; charset=utf-8', bodyLength: 20 }),
        answer({ method: 'POST', path: '/go', status: 413, json: { detail: 'Request body too large' } }),
        answer({ method: 'HEAD', path: '/items/a1', status: 200, contentType: 'application/json' }),
        answer({ path: '/items/a1/', status: 200, json: { id: 'a1' } }),
      ];
      expect(checkTraffic(DOC, documented)).to.deep.equal([]);
    });

    it('given a path both a literal and a template match, when checked, then the literal one is held to it (OpenAPI precedence)', () => {
      expect(kinds(answer({ path: '/items/all', status: 200, json: [{ id: 'a' }] }))).to.deep.equal([]);
      expect(kinds(answer({ path: '/items/all', status: 200, json: { id: 'a' } }))).to.deep.equal(['body does not match']);
    });

    it('given a request no operation has, when it gets an x-unrouted answer, then nothing is reported', () => {
      expect(kinds(answer({ path: '/nowhere/../etc', status: 404, json: { detail: 'Not Found' } }))).to.deep.equal([]);
      expect(kinds(answer({ method: 'DELETE', path: '/items/a1', status: 405, json: { detail: 'Method Not Allowed' } }))).to.deep.equal([]);
      expect(kinds(answer({ method: 'OPTIONS', path: '/items/a1', status: 200 }))).to.deep.equal([]);
    });
  });

  describe('what is reported', () => {
    it('given a status the operation does not document, when checked, then it is reported with the documented ones', () => {
      const [problem] = trafficChecker(DOC)(answer({ path: '/items/a1', status: 409, json: { detail: 'Conflict' } }));
      expect(problem).to.deep.include({ kind: 'undocumented status', method: 'GET', template: '/items/{id}', status: 409 });
      expect(problem?.message).to.equal('documented: 200, 404');
    });

    it('given a body its schema refuses, when checked, then it is reported with the first schema error', () => {
      const [problem] = trafficChecker(DOC)(answer({ path: '/items/a1', status: 200, json: { id: 'a1', size: -1 } }));
      expect(problem?.kind).to.equal('body does not match');
      expect(problem?.message).to.equal('/size must be >= 0 {"comparison":">=","limit":0}');
      expect(kinds(answer({ path: '/items/a1', status: 200, json: { size: 1 } }))).to.deep.equal(['body does not match']);
      expect(kinds(answer({ path: '/items/a1', status: 404, json: { error: 'gone' } }))).to.deep.equal(['body does not match']);
    });

    it('given an answer on a path no operation has, when it is not an x-unrouted answer, then the path is reported as undocumented', () => {
      expect(kinds(answer({ path: '/admin/secrets', status: 200, json: { secret: 1 } }))).to.deep.equal(['undocumented path']);
      expect(kinds(answer({ path: '/items/a1/extra', status: 200, json: {} }))).to.deep.equal(['undocumented path']);
    });

    it('given an answer to a method the path does not document, when it is not a 404 or 405, then the method is reported', () => {
      expect(kinds(answer({ method: 'PUT', path: '/items/a1', status: 200, json: { id: 'a1' } }))).to.deep.equal(['undocumented method']);
    });

    it('given an unrouted answer whose body does not match, when checked, then the body is reported', () => {
      expect(kinds(answer({ path: '/nowhere', status: 404, contentType: 'text/html', bodyLength: 40 }))).to.deep.equal(['undocumented content type']);
      expect(kinds(answer({ path: '/nowhere', status: 404, json: { message: 'Not Found' } }))).to.deep.equal(['body does not match']);
    });

    it('given bodies other than documented, when checked, then content type, missing, unparsable and undocumented bodies are reported', () => {
      expect(kinds(answer({ path: '/items/a1', status: 200, contentType: 'text/html', bodyLength: 10 }))).to.deep.equal(['undocumented content type']);
      expect(kinds(answer({ path: '/items/a1', status: 200 }))).to.deep.equal(['body missing']);
      expect(kinds(answer({ path: '/items/a1', status: 200, contentType: 'application/json', bodyLength: 5 }))).to.deep.equal(['body is not JSON']);
      expect(kinds(answer({ method: 'POST', path: '/go', status: 303, json: { to: '/elsewhere' } }))).to.deep.equal(['body undocumented']);
    });

    it('given many answers with one problem, when checked, then it is reported once with a count, an example and the test that sent it', () => {
      const wrong = (n: number) => answer({ path: `/items/${n}`, status: 200, json: { id: n }, test: `spec.ts: test ${n}` });
      const problems = checkTraffic(DOC, [wrong(1), wrong(2), wrong(3)]);
      expect(problems).to.have.length(1);
      expect(problems[0]).to.deep.include({ count: 3, example: { path: '/items/1', value: '1', test: 'spec.ts: test 1' } });
      expect(formatProblems(problems)).to.equal('body does not match: GET /items/{id} 200: /id must be string {"type":"string"} (3x, e.g. /items/1 with 1, in "spec.ts: test 1")');
    });
  });

  describe("the document's own shape", () => {
    it('given the hand-written document, when checked, then it holds together', () => {
      expect(documentProblems(DOC)).to.deep.equal([]);
    });

    it('given a broken document, when checked, then a dangling $ref, a response without description, a bad status key and a schema that does not compile are named', () => {
      const broken = JSON.parse(JSON.stringify(DOC)) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
      broken.paths['/items/all']!.get!.responses = {
        '200': { content: { 'application/json': { schema: { $ref: '#/components/schemas/Missing' } } } },
        '2x0': { description: 'x' },
        '404': { description: 'x', content: { 'application/json': { schema: { type: 'object', requried: ['a'] } } } },
      };
      const problems = documentProblems(broken).join('\n');
      expect(problems).to.include("must have required property 'description'");
      expect(problems).to.include('property name must be valid');
      expect(problems).to.include('$ref #/components/schemas/Missing resolves to nothing');
      expect(problems).to.include('unknown keyword: "requried"');
    });

    it("given the service's own document, when checked, then it holds together and has x-unrouted", () => {
      const doc = openApiDocument(API_ROUTE_DOCS, apiInfo());
      expect(documentProblems(doc)).to.deep.equal([]);
      expect(Object.keys((doc['x-unrouted'] as { path: object }).path)).to.include('404');
    });
  });
});
