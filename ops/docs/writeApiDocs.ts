import { readFileSync, writeFileSync } from 'node:fs';
import { API_MARKDOWN_FILE, serviceApiMarkdown } from './serviceApiMarkdown.ts';

/**
 * `npm run docs:api`: writes docs/api.md from the service's OpenAPI document. With `--check` it
 * writes nothing and exits 1 when the file is not current (for a hook or CI step of one's own;
 * ops/docs/serviceApiMarkdown.unit.spec.ts checks the same in npm test).
 */
const wanted = serviceApiMarkdown();
let current = '';
try {
  current = readFileSync(API_MARKDOWN_FILE, 'utf8');
} catch {
  // not written yet
}
if (process.argv.includes('--check')) {
  if (current !== wanted) {
    console.error(`${API_MARKDOWN_FILE} is not current: run npm run docs:api`);
    process.exit(1);
  }
  console.log(`${API_MARKDOWN_FILE} is current`);
} else if (current === wanted) {
  console.log(`${API_MARKDOWN_FILE} is current`);
} else {
  writeFileSync(API_MARKDOWN_FILE, wanted);
  console.log(`wrote ${API_MARKDOWN_FILE} (${wanted.split('\n').length} lines)`);
}
