import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_ROUTE_DOCS, apiInfo } from '../../ops/http/apiRouteDocs.ts';
import { openApiDocument } from '../../ops/http/openApiDocument.ts';
import { checkTraffic, documentProblems, formatProblems, readTraffic } from '../contracts/openApiTraffic.ts';
import { recordingTest, trafficDir } from './trafficRecorder.ts';

/**
 * Mocha root hook (.mocharc.cjs `require`): the OpenAPI conformance check of issue 35 over the
 * whole run. Before any spec it turns the recorder on (OPENAPI_TRAFFIC_DIR, a fresh folder unless
 * the environment names one: child processes inherit it and record too); each test is named on
 * what it records; after the last spec every recorded answer is held against the document the
 * service serves (test/contracts/openApiTraffic.ts), and the run fails naming each answer the
 * document does not describe. OPENAPI_TRAFFIC_CHECK=off records without checking.
 */
let ownDir: string | null = null;

export const mochaHooks = {
  beforeAll(): void {
    if (trafficDir() !== undefined) return;
    ownDir = mkdtempSync(join(tmpdir(), 'openapi-traffic-'));
    process.env.OPENAPI_TRAFFIC_DIR = ownDir;
  },

  beforeEach(this: Mocha.Context): void {
    const test = this.currentTest;
    recordingTest(test === undefined ? undefined : `${(test.file ?? '').replace(`${process.cwd()}/`, '')}: ${test.fullTitle()}`);
  },

  afterAll(this: Mocha.Context): void {
    this.timeout(120_000);
    recordingTest(undefined);
    const dir = trafficDir();
    if (dir === undefined) return;
    try {
      if (process.env.OPENAPI_TRAFFIC_CHECK === 'off') return;
      const doc = openApiDocument(API_ROUTE_DOCS, apiInfo());
      const broken = documentProblems(doc);
      if (broken.length > 0) throw new Error(`The OpenAPI document does not hold together:\n${broken.join('\n')}`);
      const exchanges = readTraffic(dir);
      const problems = checkTraffic(doc, exchanges);
      if (problems.length > 0) {
        throw new Error(
          `${problems.length} kinds of answers of the service are not what /api/v1/openapi.json documents (of ${exchanges.length} recorded; fix the route docs, *Docs.ts):\n${formatProblems(problems)}`,
        );
      }
      console.log(`  (OpenAPI conformance: ${exchanges.length} recorded answers match the document)`);
    } finally {
      if (ownDir !== null) rmSync(ownDir, { recursive: true, force: true });
      ownDir = null;
    }
  },
};
