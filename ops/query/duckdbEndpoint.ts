import { sqlStringLiteral } from './objectUrlLiterals.ts';

/** An endpoint URL as DuckDB's S3 secret spells it: host[:port], path style, SSL by the scheme. */
export const duckdbEndpoint = (endpoint: string): string[] => {
  const url = new URL(endpoint);
  return [`ENDPOINT ${sqlStringLiteral(url.host)}`, `URL_STYLE 'path'`, `USE_SSL ${url.protocol === 'https:' ? 'true' : 'false'}`];
};
