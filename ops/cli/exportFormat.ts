import { extname } from 'node:path';
import { EXPORT_FORMATS, type ExportFormat } from '../events/exportEvents.ts';

/** The file extensions each format is known by (lower case, with the dot). */
export const FORMAT_EXTENSIONS: Readonly<Record<ExportFormat, ReadonlyArray<string>>> = {
  jsonl: ['.jsonl', '.ndjson'],
  parquet: ['.parquet'],
  csv: ['.csv'],
};

const knownExtensions = (): string => Object.values(FORMAT_EXTENSIONS).flat().join(', ');

/** The format an extension names, or null for one that names none. */
export const formatOfExtension = (file: string): ExportFormat | null => {
  const extension = extname(file).toLowerCase();
  return EXPORT_FORMATS.find((format) => FORMAT_EXTENSIONS[format].includes(extension)) ?? null;
};

/**
 * The format of an export to `out`: the one `--format` gives, else the one its extension names.
 * Never a file whose extension says another format than its content (the .parquet file that held
 * JSON lines): an extension naming another format than --format is refused, and without --format
 * an extension naming none is refused too. Another extension with --format is the caller's choice.
 */
export const exportFormatFor = (out: string, format: ExportFormat | undefined): ExportFormat => {
  const named = formatOfExtension(out);
  if (format === undefined) {
    if (named === null) {
      throw new Error(`cannot tell the format of ${out} from its extension: name the file ${knownExtensions()}, or give --format (${EXPORT_FORMATS.join(', ')})`);
    }
    return named;
  }
  if (named !== null && named !== format) {
    throw new Error(`--format ${format} conflicts with the extension of ${out} (${named}): change one of them`);
  }
  return format;
};
