import { access } from 'node:fs/promises';
import { join } from 'node:path';

type DuckDB = typeof import('@duckdb/node-api');

let where: Promise<{ version: string; platform: string }> | null = null;

/** DuckDB's version and platform as its extension directory spells them (v1.5.6, linux_amd64), asked once. */
const versionAndPlatform = (duckdb: DuckDB): Promise<{ version: string; platform: string }> => {
  where ??= (async () => {
    const instance = await duckdb.DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
    try {
      const connection = await instance.connect();
      try {
        const reader = await connection.runAndReadAll('SELECT (SELECT library_version FROM pragma_version()), (SELECT platform FROM pragma_platform())');
        const [version, platform] = (reader.getRows()[0] ?? []).map(String);
        return { version: version ?? duckdb.version(), platform: platform ?? '' };
      } finally {
        connection.closeSync();
      }
    } finally {
      instance.closeSync();
    }
  })();
  return where;
};

/**
 * The extension's file in a DuckDB extension directory filled at deployment
 * (<directory>/<version>/<platform>/<name>.duckdb_extension, the layout INSTALL writes), or null
 * when it is not there: then the objects are fetched through the cloud SDK instead. Nothing is
 * ever downloaded: DuckDB is told the directory and LOADs from it, with autoinstall off.
 */
export const duckdbExtensionFile = async (duckdb: DuckDB, directory: string, name: string): Promise<string | null> => {
  const { version, platform } = await versionAndPlatform(duckdb);
  const file = join(directory, version, platform, `${name}.duckdb_extension`);
  return access(file).then(
    () => file,
    () => null,
  );
};
