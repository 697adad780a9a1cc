import { expect } from 'chai';
import { exportFormatFor, formatOfExtension } from './exportFormat.ts';

describe('events export: the format of the file', () => {
  it('given no --format, when the file is .parquet, .jsonl, .ndjson or .csv (any case), then that extension picks the format', () => {
    expect(exportFormatFor('events.parquet', undefined)).to.equal('parquet');
    expect(exportFormatFor('/tmp/e.JSONL', undefined)).to.equal('jsonl');
    expect(exportFormatFor('e.ndjson', undefined)).to.equal('jsonl');
    expect(exportFormatFor('dir.v2/e.csv', undefined)).to.equal('csv');
  });

  it('given no --format, when the extension names no format (or there is none), then the error names the file, the extensions and --format', () => {
    for (const out of ['events.txt', 'events', 'dir.parquet/events', 'events.parquet.gz']) {
      expect(() => exportFormatFor(out, undefined)).to.throw(`cannot tell the format of ${out} from its extension: name the file .jsonl, .ndjson, .parquet, .csv, or give --format`);
    }
  });

  it('given --format, when the extension names another format, then it is refused naming both', () => {
    expect(() => exportFormatFor('events.jsonl', 'parquet')).to.throw('--format parquet conflicts with the extension of events.jsonl (jsonl)');
    expect(() => exportFormatFor('events.parquet', 'csv')).to.throw('--format csv conflicts with the extension of events.parquet (parquet)');
  });

  it('given --format, when the extension agrees or names no format, then --format holds', () => {
    expect(exportFormatFor('events.ndjson', 'jsonl')).to.equal('jsonl');
    expect(exportFormatFor('events.out', 'parquet')).to.equal('parquet');
    expect(exportFormatFor('events', 'csv')).to.equal('csv');
    expect(formatOfExtension('events.json')).to.equal(null);
  });
});
