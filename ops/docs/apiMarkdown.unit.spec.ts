import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { API_ROUTE_DOCS, apiInfo } from '../http/apiRouteDocs.ts';
import { openApiDocument, type OpenApiDocument } from '../http/openApiDocument.ts';
import { anchorOf, apiMarkdown, prose, typeText } from './apiMarkdown.ts';
import { API_MARKDOWN_FILE, serviceApiMarkdown } from './serviceApiMarkdown.ts';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** The `## ` and `### ` headings of a Markdown text, outside code fences. */
const headingsOf = (markdown: string): string[] => {
  let fenced = false;
  const headings: string[] = [];
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    else if (!fenced && /^#{1,6} /.test(line)) headings.push(line.replace(/^#+ /, ''));
  }
  return headings;
};

/** A small document in the shape openApiDocument builds. */
const tinyDocument = (paths: OpenApiDocument['paths'], schemas: Record<string, unknown> = {}): OpenApiDocument => ({
  openapi: '3.1.0',
  info: { title: 'Tiny', version: '1.2.3', description: 'A tiny service.' },
  tags: [{ name: 'Things', description: 'Things and <their> parts.' }],
  paths,
  components: { schemas, securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' }, frontendToken: { type: 'apiKey', in: 'cookie', name: 'frontend_token' } } },
});

describe('docs/api.md, generated from the OpenAPI document', () => {
  describe('the committed file', () => {
    const committed = readFileSync(API_MARKDOWN_FILE, 'utf8');
    const document = openApiDocument(API_ROUTE_DOCS, apiInfo());

    it('given the routes as they are, when docs/api.md is generated again, then it is the committed file (else: npm run docs:api)', () => {
      const wanted = serviceApiMarkdown();
      if (committed === wanted) return;
      const have = committed.split('\n');
      const want = wanted.split('\n');
      const line = want.findIndex((text, index) => have[index] !== text);
      expect.fail(`docs/api.md is not current: run npm run docs:api and commit it. First difference at line ${line + 1}:\n  committed: ${have[line]}\n  generated: ${want[line]}`);
    });

    it('given the OpenAPI document, when the file is read, then every operation has its section (the routes the issue found missing among them)', () => {
      const headings = new Set(headingsOf(committed));
      const operations = Object.entries(document.paths).flatMap(([path, item]) => METHODS.filter((method) => item[method] !== undefined).map((method) => `${method.toUpperCase()} ${path}`));
      expect(operations.length).to.be.greaterThan(50);
      expect(operations.filter((operation) => !headings.has(operation))).to.deep.equal([]);
      for (const route of ['POST /api/v1/catalog/update', 'GET /api/v1/events', 'GET /api/v1/cron/status/{project_laui}', 'POST /api/v1/user/create', 'POST /mcp']) {
        expect(headings.has(route), route).to.equal(true);
      }
    });

    it('given the file, when its links to its own sections are followed, then each one lands on a heading', () => {
      const anchors = new Set(headingsOf(committed).map(anchorOf));
      const links = [...committed.matchAll(/\]\(#([^)]+)\)/g)].map((match) => match[1] ?? '');
      expect(links.length).to.be.greaterThan(100);
      expect([...new Set(links.filter((anchor) => !anchors.has(anchor)))]).to.deep.equal([]);
    });

    it('given the file, when read for the abstract interface text it replaced, then none of its placeholders are left', () => {
      for (const placeholder of ['<rdb_a>', '<cloud_a>', 'not shown', '{base_url}', 'Sample values are not given']) expect(committed).not.to.include(placeholder);
    });
  });

  describe('rendering', () => {
    it('given an operation with parameters, a body with nested fields and responses, when rendered, then each has its table, nested fields by path', () => {
      const markdown = apiMarkdown(
        tinyDocument(
          {
            '/things/{id}': {
              post: {
                tags: ['Things'],
                summary: 'Change a thing',
                description: 'Needs <EDIT> on `<the thing>`.',
                security: [{ bearerAuth: [] }],
                parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^a|b$' } }],
                requestBody: {
                  required: true,
                  content: {
                    'application/json': {
                      schema: {
                        type: 'object',
                        properties: { size: { type: 'integer', minimum: 1, maximum: 9 }, parts: { type: 'array', items: { type: 'object', properties: { name: { type: 'string', minLength: 1 } }, required: ['name'] } } },
                        required: ['size'],
                      },
                    },
                  },
                },
                responses: { '200': { description: 'Changed', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } }, '204': { description: 'Nothing to do' } },
              },
            },
          },
          { Thing: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } },
        ),
      );
      expect(markdown).to.include('### POST /things/{id}\n\nChange a thing.\n\nNeeds &lt;EDIT&gt; on `<the thing>`.\n\nAuthentication: `Authorization: Bearer <access token>`.');
      expect(markdown).to.include('| `id` | path | yes | string | pattern `^a\\|b$` |');
      expect(markdown).to.include('Request body (`application/json`, required): object (fields below).');
      expect(markdown).to.include('| `size` | integer | yes | 1-9 |\n| `parts` | array of object | no |  |\n| `parts[].name` | string | yes | not empty |');
      expect(markdown).to.include('| 200 | Changed | [Thing](#thing-schema) |\n| 204 | Nothing to do | none |');
      expect(markdown).to.include('### Thing (schema)\n\n| Field | Type | Required | Notes |\n|---|---|---|---|\n| `id` | string | yes |  |');
      expect(markdown).to.include('Things and &lt;their&gt; parts.');
    });

    it('given public, optional and cookie security, when rendered, then each says how a caller authenticates', () => {
      const operation = (security: unknown[]) => ({ tags: ['Things'], summary: 'S', security, responses: {} });
      const markdown = apiMarkdown(tinyDocument({ '/a': { get: operation([]) }, '/b': { get: operation([{}, { bearerAuth: [] }, { frontendToken: [] }]) }, '/c': { get: operation([{ frontendToken: [] }]) } }));
      expect(markdown).to.include('### GET /a\n\nS.\n\nAuthentication: none (public).');
      expect(markdown).to.include('### GET /b\n\nS.\n\nAuthentication: optional: `Authorization: Bearer <access token>`, or the frontend_token cookie identifies the caller.');
      expect(markdown).to.include('### GET /c\n\nS.\n\nAuthentication: the frontend_token cookie.');
    });

    it('given schemas of every shape, when typed, then the type reads as a reader says it', () => {
      expect(typeText({ type: ['string', 'null'] })).to.equal('string or null');
      expect(typeText({ type: 'array', items: { $ref: '#/components/schemas/Group' } })).to.equal('array of [Group](#group-schema)');
      expect(typeText({ enum: ['a', 1] })).to.equal('one of `"a"`, `1`');
      expect(typeText({ anyOf: [{ type: 'string' }, { const: true }] })).to.equal('one of: string; `true`');
      expect(typeText({})).to.equal('any');
      expect(typeText({ description: 'anything' })).to.equal('any');
      expect(prose('a <b> & `<c>`')).to.equal('a &lt;b&gt; & `<c>`');
    });

    it('given two headings that would share an anchor, when rendered, then it refuses rather than link to the wrong one', () => {
      const doc = tinyDocument({ '/x': { get: { tags: ['Things'], summary: 'S', security: [], responses: {} } } });
      doc.tags = [{ name: 'Things' }, { name: 'GET /x' }];
      expect(() => apiMarkdown(doc)).to.throw('The headings "GET /x" and "GET /x" would share the anchor #get-x');
    });
  });
});
