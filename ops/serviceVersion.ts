import { readFileSync } from 'node:fs';

/** The service's version, as package.json names it (the OpenAPI document, backups, trace resources). */
export const serviceVersion = (): string => {
  try {
    return String((JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown }).version ?? '0.0.0');
  } catch {
    return '0.0.0';
  }
};
